import NetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// Non-blocking reads of whole packets from a packet socket (the test's end of a fake
/// interface): one datagram each, never waiting.
enum PacketDescriptor {
    /// The next packet waiting on `fd`, or nil if none is (or the socket is closed).
    static func receive(from fd: Int32, maximum: Int = 65_536) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: maximum)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, maximum, Int32(MSG_DONTWAIT)) }
        guard count > 0 else { return nil }
        return Array(buffer[0..<count])
    }
}
