import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// A listening Unix stream socket at a path, for a server's local status socket: created with
/// mode 0600 inside a directory it makes 0700, taking over a stale socket file but never one a
/// running process still answers on, and removed on close only if it is still this listener's
/// (a successor may have replaced it).
public final class UnixStreamListener: @unchecked Sendable {
    public let path: String
    private let socket: TCPSocket
    private let inode: UInt64

    /// Binds `path`. Errors name the path: in use by a running process, not a socket, or the
    /// system's refusal.
    public init(path: String) throws(SystemError) {
        guard let (socketAddress, length) = TCPSocket.unixAddress(path) else { throw SystemError("bind", errno: ENAMETOOLONG, subject: path) }
        var address = socketAddress
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !directory.isEmpty, mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw SystemError("mkdir", errno: errno, subject: directory)
        }
        var existing = stat()
        if lstat(path, &existing) == 0 {
            guard existing.st_mode & S_IFMT == S_IFSOCK else { throw SystemError("bind", errno: EEXIST, subject: "\(path) (not a socket)") }
            if TCPSocket.connect(unixPath: path, timeoutMilliseconds: 500) != nil {
                throw SystemError("bind", errno: EADDRINUSE, subject: "\(path) (another running server answers on it)")
            }
            unlink(path)
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno) }
        let socket = TCPSocket(fd: fd)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard bound == 0 else { throw SystemError("bind", errno: errno, subject: path) }
        guard chmod(path, 0o600) == 0 else {
            let error = errno
            unlink(path)
            throw SystemError("chmod", errno: error, subject: path)
        }
        guard Glibc.listen(fd, 8) == 0 else {
            let error = errno
            unlink(path)
            throw SystemError("listen", errno: error, subject: path)
        }
        var created = stat()
        _ = lstat(path, &created)
        self.path = path
        self.socket = socket
        inode = UInt64(created.st_ino)
    }

    /// Waits up to `milliseconds` for a connection: the connection and the connecting process's
    /// user id (`SO_PEERCRED`); nil on timeout.
    public func accept(waitMilliseconds: Int32) throws(SystemError) -> (connection: TCPSocket, uid: UInt32)? {
        guard let connection = try socket.accept(waitMilliseconds: waitMilliseconds) else { return nil }
        var credentials = KernelUCred()
        var length = socklen_t(MemoryLayout<KernelUCred>.size)
        guard getsockopt(connection.fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
        return (connection, credentials.uid)
    }

    /// Stops listening and removes the socket file if it is still this listener's.
    public func close() {
        socket.shutdown()
        socket.close()
        var current = stat()
        if lstat(path, &current) == 0, UInt64(current.st_ino) == inode { unlink(path) }
    }
}
