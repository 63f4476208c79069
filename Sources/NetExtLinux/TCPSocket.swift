import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// A blocking stream socket (TCP, or Unix with `connect(unixPath:)`) for small request/response
/// exchanges (netextd's DNS stub over TCP, charon's VICI socket):
/// listen, accept, connect with a deadline, exact reads and full writes with timeouts. One
/// thread uses a socket at a time (it is handed over, never shared).
public final class TCPSocket: @unchecked Sendable {
    public let fd: Int32
    private var isClosed = false

    init(fd: Int32) { self.fd = fd }

    deinit { close() }

    /// A listening socket on `address` (address reuse on, `backlog` pending connections).
    public static func listen(on address: SocketAddress, backlog: Int32 = 32) throws(SystemError) -> TCPSocket {
        let fd = socket(address.isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno) }
        let socket = TCPSocket(fd: fd)
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0 else { throw SystemError("bind", errno: errno, subject: address.description) }
        guard Glibc.listen(fd, backlog) == 0 else { throw SystemError("listen", errno: errno, subject: address.description) }
        return socket
    }

    /// Waits up to `milliseconds` for a connection; nil on timeout.
    public func accept(waitMilliseconds: Int32) throws(SystemError) -> TCPSocket? {
        guard PacketIO.waitReadable(fd, milliseconds: waitMilliseconds) else { return nil }
        let client = Glibc.accept(fd, nil, nil)
        guard client >= 0 else {
            if errno == EAGAIN || errno == EINTR || errno == ECONNABORTED { return nil }
            throw SystemError("accept", errno: errno)
        }
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        return TCPSocket(fd: client)
    }

    /// A connection to `address`, or nil if it cannot be made within `milliseconds`. `mark`: the
    /// socket's mark (`SO_MARK`, CAP_NET_ADMIN), set before the route is chosen.
    public static func connect(to address: SocketAddress, timeoutMilliseconds: Int, mark: UInt32? = nil) -> TCPSocket? {
        let fd = socket(address.isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        let socket = TCPSocket(fd: fd)
        if let mark, !setSocketMark(fd, mark) { return nil }
        socket.setTimeouts(milliseconds: timeoutMilliseconds)
        guard address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 else { return nil }
        return socket
    }

    /// Send and receive timeouts (a blocked call fails after this long).
    public func setTimeouts(milliseconds: Int) {
        var value = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Exactly `count` bytes, or nil if the peer closed or the timeout passed first.
    public func read(exactly count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + filled, count - filled, 0) }
            if got > 0 {
                filled += got
            } else if got < 0 && errno == EINTR {
                continue
            } else {
                return nil
            }
        }
        return bytes
    }

    /// Writes everything; false if the connection failed.
    public func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if count > 0 {
                sent += count
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Stops a listening socket from accepting (a thread waiting in `accept` returns).
    public func shutdown() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Gives the descriptor up: the caller (a relay) closes it from now on, this object never.
    public func detach() -> Int32 {
        isClosed = true
        return fd
    }

    public func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }
}
