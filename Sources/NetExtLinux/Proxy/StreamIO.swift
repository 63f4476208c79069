import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// Blocking reads and writes on a connected stream socket (an app proxy's flow, its upstream).
public enum StreamIO {
    /// One read: the bytes received (0: the peer finished sending).
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, SystemError> {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return .success(count) }
            if errno != EINTR { return .failure(SystemError("recv", errno: errno)) }
        }
    }

    /// Writes everything (no SIGPIPE: a closed peer is an error).
    public static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Void, SystemError> {
        var sent = 0
        while sent < bytes.count {
            let count = send(fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            if count > 0 {
                sent += count
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return .failure(SystemError("send", errno: count < 0 ? errno : EPIPE))
            }
        }
        return .success(())
    }

    /// Ends one or both directions; the descriptor stays open.
    public static func shutdown(_ fd: Int32, read: Bool, write: Bool) {
        let how: Int32 = read && write ? Int32(SHUT_RDWR) : (read ? Int32(SHUT_RD) : Int32(SHUT_WR))
        _ = Glibc.shutdown(fd, how)
    }

    /// With `true`, any close of the socket — the holder's, or the kernel's when the holding
    /// process dies — resets the connection (SO_LINGER 0) instead of ending it in order; `false`
    /// gives the orderly close back.
    public static func setResetOnClose(_ fd: Int32, _ reset: Bool) {
        var linger = Glibc.linger(l_onoff: reset ? 1 : 0, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    /// Closes with a reset (SO_LINGER 0): the peer's next call fails at once.
    public static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(fd)
    }
}

/// Waiting on several descriptors at once (a relay thread of a reference provider).
public enum DescriptorWait {
    /// Which of `fds` are readable (or at their end, or failed) after waiting at most
    /// `milliseconds`; all false on timeout.
    public static func readable(_ fds: [Int32], milliseconds: Int32) -> [Bool] {
        var pollers = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&pollers, nfds_t(pollers.count), milliseconds)
        guard ready > 0 else { return Array(repeating: false, count: fds.count) }
        return pollers.map { $0.revents != 0 }
    }
}

/// One datagram at a time on a connected UDP socket (an app proxy's UDP flow).
public enum DatagramIO {
    /// Receives one datagram (blocking); its length (a datagram may be empty).
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, SystemError> {
        StreamIO.receive(fd, into: buffer)
    }

    /// Sends one datagram.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Void, SystemError> {
        while true {
            let count = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if count >= 0 { return .success(()) }
            if errno != EINTR { return .failure(SystemError("send", errno: errno)) }
        }
    }
}
