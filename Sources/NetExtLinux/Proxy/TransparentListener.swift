import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP listener that nftables `tproxy` hands connections to (IP_TRANSPARENT, so the
/// kernel accepts connections addressed anywhere; CAP_NET_ADMIN). An accepted socket's local
/// endpoint is where the app connected to, its remote endpoint the app's own.
public final class TransparentListener: @unchecked Sendable {
    public let fd: Int32
    /// The port on 127.0.0.1 or ::1 the `tproxy` rule names.
    public let port: UInt16
    public let isIPv6: Bool

    /// Listens on 127.0.0.1 (or ::1) at `port` (0: a free one).
    public init(ipv6: Bool, port: UInt16 = 0) throws(SystemError) {
        var chosen = port
        let result = netext_tproxy_socket(ipv6 ? 1 : 0, 0, &chosen)
        guard result >= 0 else { throw SystemError("transparent listener", errno: -result, subject: ipv6 ? "[::1]:\(port)" : "127.0.0.1:\(port)") }
        fd = result
        self.port = chosen
        isIPv6 = ipv6
    }

    private var isClosed = false

    deinit { close() }

    /// Stops listening (connections not yet accepted are reset). Only the thread that accepts
    /// calls it.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// The next waiting connection as a blocking, close-on-exec descriptor; nil when none is
    /// waiting (the listener is non-blocking) or it was reset before being accepted.
    public func accept() throws(SystemError) -> Int32? {
        // netextd's children close every inherited descriptor above 2 (netext_spawn), so
        // marking close-on-exec after the accept is no race.
        let client = Glibc.accept(fd, nil, nil)
        guard client >= 0 else {
            switch errno {
            case EAGAIN, EINTR, ECONNABORTED: return nil
            case EMFILE, ENFILE, ENOBUFS, ENOMEM: throw SystemError("accept", errno: errno, subject: "transparent listener")
            default: throw SystemError("accept", errno: errno, subject: "transparent listener")
            }
        }
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        return client
    }
}

/// The two ends of a connected socket.
public enum SocketEndpoints {
    /// Where the socket is bound: for a connection `tproxy` delivered, the address the app
    /// connected to.
    public static func local(of fd: Int32) -> SocketAddress? { endpoint(fd, peer: false) }
    /// The peer's address: for a connection `tproxy` delivered, the app's socket.
    public static func remote(of fd: Int32) -> SocketAddress? { endpoint(fd, peer: true) }

    private static func endpoint(_ fd: Int32, peer: Bool) -> SocketAddress? {
        var family: Int32 = 0
        var port: UInt16 = 0
        var bytes = [UInt8](repeating: 0, count: 16)
        guard netext_socket_endpoint(fd, peer ? 1 : 0, &family, &bytes, &port) == 0 else { return nil }
        return SocketAddress(address: family == 4 ? Array(bytes[0..<4]) : bytes, port: port)
    }
}

/// Moving a stream's bytes to another socket inside the kernel (splice through a pipe): the
/// relay of the reference proxies and of flows that go direct.
public enum StreamSplice {
    /// Moves everything `from` sends to `to` until `from` ends (then `to` is shut down for
    /// writing) or a side fails (then both are shut down). Blocks; returns the bytes moved.
    @discardableResult
    public static func pump(from: Int32, to: Int32) -> Result<Int, SystemError> {
        let moved = netext_splice_stream(from, to)
        return moved >= 0 ? .success(Int(moved)) : .failure(SystemError("splice", errno: Int32(-moved)))
    }
}

/// An app proxy's listeners (IPv4, and IPv6 where the machine has it) and a way to stop the
/// thread that waits on them.
public final class TransparentListenerSet: @unchecked Sendable {
    public let ipv4: TransparentListener
    public let ipv6: TransparentListener?
    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// Opens both listeners on free ports (IPv6 is left out where ::1 cannot be bound).
    public init() throws(SystemError) {
        ipv4 = try TransparentListener(ipv6: false)
        ipv6 = try? TransparentListener(ipv6: true)
        var fds: [Int32] = [-1, -1]
        let result = netext_pipe_cloexec(&fds)
        guard result == 0 else { throw SystemError("pipe", errno: -result) }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    /// Waits (at most `milliseconds`) for connections and accepts those waiting, at most `limit`;
    /// nil once `stop()` was called. Accept failures (out of descriptors) are reported through
    /// `failed` and the wait goes on after a pause, so a full table is not a busy loop.
    public func accept(waitMilliseconds: Int32, limit: Int = 64, failed: (SystemError) -> Void) -> [Int32]? {
        var pollers = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0), pollfd(fd: ipv4.fd, events: Int16(POLLIN), revents: 0)]
        if let ipv6 { pollers.append(pollfd(fd: ipv6.fd, events: Int16(POLLIN), revents: 0)) }
        let ready = poll(&pollers, nfds_t(pollers.count), waitMilliseconds)
        if pollers[0].revents != 0 { return nil }
        guard ready > 0 else { return [] }
        var accepted: [Int32] = []
        for (index, listener) in [ipv4, ipv6].compactMap({ $0 }).enumerated() where pollers[index + 1].revents != 0 {
            while accepted.count < limit {
                do {
                    guard let fd = try listener.accept() else { break }
                    accepted.append(fd)
                } catch {
                    failed(error)
                    usleep(50_000)
                    break
                }
            }
        }
        return accepted
    }

    /// Closes both listeners; called by the accepting thread once `accept` returned nil.
    public func close() {
        ipv4.close()
        ipv6?.close()
    }

    /// Makes the waiting `accept` return nil (now and from now on).
    public func stop() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    /// Closes a connection nobody will serve with a reset, so the app sees it fail at once.
    public static func reset(_ fd: Int32) { StreamIO.reset(fd) }
}
