import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

extension TCPSocket {
    /// A connection to the Unix stream socket at `path` (charon's VICI socket), with send and
    /// receive timeouts of `timeoutMilliseconds`; nil if nothing listens there. The exact reads and
    /// full writes work on it as on a TCP connection.
    public static func connect(unixPath path: String, timeoutMilliseconds: Int) -> TCPSocket? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        let socket = TCPSocket(fd: fd)
        socket.setTimeouts(milliseconds: timeoutMilliseconds)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return connected == 0 ? socket : nil
    }
}
