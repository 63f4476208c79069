import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

extension TCPSocket {
    /// A connection to the Unix stream socket at `path` (charon's VICI socket), with send and
    /// receive timeouts of `timeoutMilliseconds`; nil if nothing listens there. The exact reads and
    /// full writes work on it as on a TCP connection.
    public static func connect(unixPath path: String, timeoutMilliseconds: Int) -> TCPSocket? {
        guard var address = unixAddress(path) else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        let socket = TCPSocket(fd: fd)
        socket.setTimeouts(milliseconds: timeoutMilliseconds)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return connected == 0 ? socket : nil
    }

    /// The `sockaddr_un` for `path`; nil if the path is empty or too long for one.
    static func unixAddress(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return address
    }

    /// Everything the peer sends until it closes, at most `limit` bytes; nil if the connection
    /// failed, timed out or sent more.
    public func readToEnd(limit: Int) -> [UInt8]? {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if got > 0 {
                result += buffer[..<got]
                if result.count > limit { return nil }
            } else if got == 0 {
                return result
            } else if errno != EINTR {
                return nil
            }
        }
    }
}
