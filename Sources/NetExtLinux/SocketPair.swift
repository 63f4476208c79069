import CNetExtLinux
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Unix socket pairs and descriptor passing (`SCM_RIGHTS`).
public enum SocketPair {
    /// A connected stream socket pair, both ends close-on-exec.
    public static func make() throws(SystemError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        let result = netext_socketpair(&fds)
        guard result == 0 else { throw SystemError("socketpair", errno: -result) }
        return (fds[0], fds[1])
    }

    /// Sends a file descriptor over a Unix socket.
    public static func send(descriptor: Int32, over socket: Int32) throws(SystemError) {
        let result = netext_send_fd(socket, descriptor)
        guard result == 0 else { throw SystemError("sendmsg SCM_RIGHTS", errno: -result) }
    }

    /// Receives a file descriptor sent with `send(descriptor:over:)`.
    public static func receiveDescriptor(over socket: Int32) throws(SystemError) -> Int32 {
        let result = netext_receive_fd(socket)
        guard result >= 0 else { throw SystemError("recvmsg SCM_RIGHTS", errno: -result) }
        return result
    }

    /// Closes a descriptor.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}
