import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

extension TCPSocket {
    /// A connection to the Unix stream socket at `path` (charon's VICI socket), with send and
    /// receive timeouts of `timeoutMilliseconds`; nil if nothing listens there. The exact reads and
    /// full writes work on it as on a TCP connection.
    public static func connect(unixPath path: String, timeoutMilliseconds: Int) -> TCPSocket? {
        guard let (socketAddress, length) = unixAddress(path) else { return nil }
        var address = socketAddress
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        let socket = TCPSocket(fd: fd)
        socket.setTimeouts(milliseconds: timeoutMilliseconds)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        return connected == 0 ? socket : nil
    }

    /// The `sockaddr_un` for `path` and its length; nil if the path is empty or too long for one.
    /// A path starting with `@` names a socket in the abstract namespace (the name after a NUL
    /// byte, its length exact), as `$NOTIFY_SOCKET` may.
    static func unixAddress(_ path: String) -> (address: sockaddr_un, length: socklen_t)? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            if !abstract { buffer[bytes.count] = 0 }
        }
        let length = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count + (abstract ? 0 : 1)
        return (address, socklen_t(length))
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
