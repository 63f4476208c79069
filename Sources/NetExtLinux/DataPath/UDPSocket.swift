import CNetExtLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A blocking UDP socket for data-plane threads: one datagram per call, caller-owned buffers.
public final class UDPSocket: Sendable {
    public let fd: Int32
    public let isIPv6: Bool
    private let closed = Mutex(false)

    /// A socket bound to `address` (port 0 = any). An IPv6 socket also receives IPv4 (dual stack)
    /// when bound to `::`.
    public init(bindingTo address: SocketAddress, receiveBuffer: Int = 4 << 20, sendBuffer: Int = 4 << 20) throws(SystemError) {
        isIPv6 = address.isIPv6
        fd = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno) }
        var zero: Int32 = 0
        if isIPv6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size)) }
        var receive = Int32(receiveBuffer)
        var send = Int32(sendBuffer)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send, socklen_t(MemoryLayout<Int32>.size))
        let result = address.withSockaddr { bind(fd, $0, $1) }
        guard result == 0 else {
            let error = errno
            Glibc.close(fd)
            throw SystemError("bind", errno: error, subject: address.description)
        }
    }

    /// Marks the socket's packets (`SO_MARK`, needs CAP_NET_ADMIN): policy rules on the mark
    /// choose their route. Set it before `connect` so the route and source address follow it.
    public func setMark(_ mark: UInt32) throws(SystemError) {
        guard setSocketMark(fd, mark) else { throw SystemError("setsockopt SO_MARK", errno: errno) }
    }

    /// Connects the socket to one peer (a client's socket to its server).
    public func connect(to address: SocketAddress) throws(SystemError) {
        let result = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        guard result == 0 else { throw SystemError("connect", errno: errno, subject: address.description) }
    }

    /// Connects again to `address`, letting the kernel choose the local address (and port) anew:
    /// after the network changed, the old source address may no longer exist. The socket is
    /// first dissolved from its peer (`AF_UNSPEC`), which resets an unbound socket's source.
    public func reconnect(to address: SocketAddress) throws(SystemError) {
        var unspecified = sockaddr()
        unspecified.sa_family = sa_family_t(AF_UNSPEC)
        _ = Glibc.connect(fd, &unspecified, socklen_t(MemoryLayout<sockaddr>.size))
        try connect(to: address)
    }

    /// The local address the kernel would use now to reach `address` (nil: no route).
    public static func preferredSource(toward address: SocketAddress) -> SocketAddress? {
        guard let probe = try? UDPSocket(bindingTo: SocketAddress(address: [UInt8](repeating: 0, count: address.address.count), port: 0), receiveBuffer: 4096, sendBuffer: 4096) else { return nil }
        defer { probe.close() }
        guard (try? probe.connect(to: address)) != nil else { return nil }
        return probe.localAddress
    }

    /// The local address the socket is bound to.
    public var localAddress: SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return result == 0 ? SocketAddress.from(storage) : nil
    }

    /// Sends one datagram to `address` (or to the connected peer if nil).
    public func send(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress? = nil) throws(SystemError) {
        while true {
            let count: Int
            if let address {
                let target = isIPv6 && !address.isIPv6 ? SocketAddress(address: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] + address.address, port: address.port) : address
                count = target.withSockaddr { sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), $0, $1) }
            } else {
                count = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            }
            if count >= 0 { return }
            if errno == EINTR { continue }
            throw SystemError("sendto", errno: errno, subject: address?.description)
        }
    }

    /// Receives one datagram into `buffer`; returns its length and sender. Blocks; returns nil
    /// once the socket is closed.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> (count: Int, from: SocketAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        while true {
            let count = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, buffer.baseAddress, buffer.count, 0, $0, &length) }
            }
            if closed.withLock({ $0 }) { return nil }
            if count >= 0 {
                guard let from = SocketAddress.from(storage) else { continue }
                return (count, from)
            }
            if errno == EINTR { continue }
            if closed.withLock({ $0 }) { return nil }
            throw SystemError("recvfrom", errno: errno)
        }
    }

    /// Whether `close()` was called.
    public var isClosed: Bool { closed.withLock { $0 } }

    /// Sets a receive timeout so a blocked `receive` wakes up periodically (EAGAIN is thrown).
    public func setReceiveTimeout(milliseconds: Int) {
        var value = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Closes the socket; a thread blocked in `receive` returns.
    public func close() {
        let wasClosed = closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        if !wasClosed {
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
        }
    }

    // MARK: Replying from the address a datagram came to

    /// Asks the kernel to report each datagram's destination address (`IP_PKTINFO`), for a
    /// server on a host with several addresses: replies must leave from the address the client
    /// sent to, or its connected socket drops them.
    public func reportDestinationAddresses() throws(SystemError) {
        let result = netext_udp_enable_pktinfo(fd, isIPv6 ? 1 : 0)
        guard result == 0 else { throw SystemError("setsockopt IP_PKTINFO", errno: -result) }
    }

    /// Sends one datagram to `address`, from `source` (the address the peer last sent to) if given.
    public func send(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress, from source: LocalAddress?) throws(SystemError) {
        guard let source else { return try send(bytes, to: address) }
        let target = isIPv6 && !address.isIPv6 ? SocketAddress(address: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] + address.address, port: address.port) : address
        var local = source.raw
        let result = target.withSockaddr { netext_udp_send(fd, bytes.baseAddress, UInt(bytes.count), $0, $1, &local) }
        guard result >= 0 else { throw SystemError("sendmsg", errno: Int32(-result), subject: address.description) }
    }
}

/// A local address a datagram arrived at (see `UDPSocket.reportDestinationAddresses`).
public struct LocalAddress: Sendable {
    let raw: netext_local_address

    init?(_ raw: netext_local_address) {
        guard raw.family == AF_INET || raw.family == AF_INET6 else { return nil }
        self.raw = raw
    }
}
