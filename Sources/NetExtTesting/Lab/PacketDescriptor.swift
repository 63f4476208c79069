import NetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// Non-blocking reads of whole packets from a packet socket (the test's end of a fake
/// interface): one datagram each, never waiting, into a buffer the reader keeps.
struct PacketDescriptor {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    init(_ fd: Int32) { self.fd = fd }

    /// The next packet waiting, or nil if none is (or the socket is closed).
    mutating func receive() -> ArraySlice<UInt8>? {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard count > 0 else { return nil }
        return buffer[0..<count]
    }
}
