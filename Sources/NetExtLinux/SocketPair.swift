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

    /// A connected sequenced-packet socket pair (each send is one message), close-on-exec.
    public static func makePackets() throws(SystemError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        let result = netext_socketpair_packets(&fds)
        guard result == 0 else { throw SystemError("socketpair(SOCK_SEQPACKET)", errno: -result) }
        return (fds[0], fds[1])
    }

    /// Sends one message on a sequenced-packet socket; with `wait` false it fails with EAGAIN
    /// instead of blocking when the peer is not reading.
    public static func sendMessage(_ bytes: [UInt8], over socket: Int32, wait: Bool) throws(SystemError) {
        let flags = Int32(MSG_NOSIGNAL) | (wait ? 0 : Int32(MSG_DONTWAIT))
        var sent: Int
        repeat { sent = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, flags) } } while sent < 0 && errno == EINTR
        guard sent == bytes.count else { throw SystemError("send", errno: sent < 0 ? errno : EMSGSIZE) }
    }

    /// Receives one message (blocking) into `buffer`; returns its length, 0 when the peer closed.
    public static func receiveMessage(into buffer: UnsafeMutableRawBufferPointer, over socket: Int32) throws(SystemError) -> Int {
        var received: Int
        repeat { received = Glibc.recv(socket, buffer.baseAddress, buffer.count, 0) } while received < 0 && errno == EINTR
        guard received >= 0 else { throw SystemError("recv", errno: errno) }
        return received
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

    /// Shuts a socket down both ways (readers see the end, writers get EPIPE); it stays open.
    public static func shutdown(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Closes a descriptor.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}
