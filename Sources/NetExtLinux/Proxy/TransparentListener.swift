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
        let client = netext_accept_cloexec(fd)
        guard client >= 0 else {
            switch errno {
            case EAGAIN, EINTR, ECONNABORTED: return nil
            case EMFILE, ENFILE, ENOBUFS, ENOMEM: throw SystemError("accept", errno: errno, subject: "transparent listener")
            default: throw SystemError("accept", errno: errno, subject: "transparent listener")
            }
        }
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


/// A loopback UDP socket that nftables `tproxy` hands an app's first datagram of each flow to
/// (IP_TRANSPARENT, IP_RECVORIGDSTADDR): the datagram, its sender and where it was sent.
public final class TransparentDatagramSocket: @unchecked Sendable {
    public let fd: Int32
    public let port: UInt16
    private var isClosed = false

    /// One datagram as the app sent it.
    public struct Datagram: Sendable, Hashable {
        public var source: SocketAddress
        public var destination: SocketAddress
        public var payload: [UInt8]
    }

    public init(ipv6: Bool, port: UInt16 = 0) throws(SystemError) {
        var chosen = port
        let result = netext_tproxy_socket(ipv6 ? 1 : 0, 1, &chosen)
        guard result >= 0 else { throw SystemError("transparent UDP socket", errno: -result, subject: ipv6 ? "[::1]:\(port)" : "127.0.0.1:\(port)") }
        fd = result
        self.port = chosen
    }

    deinit { close() }

    public func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// The next waiting datagram (the socket is non-blocking); nil when none is waiting. A
    /// datagram without its original destination is dropped (counted by the caller as malformed
    /// through `dropped`).
    public func receive(into buffer: UnsafeMutableRawBufferPointer, dropped: () -> Void) -> Datagram? {
        while true {
            var family: Int32 = 0
            var source = [UInt8](repeating: 0, count: 16), destination = [UInt8](repeating: 0, count: 16)
            var sourcePort: UInt16 = 0, destinationPort: UInt16 = 0
            let count = netext_udp_receive_original(fd, buffer.baseAddress, buffer.count, &family, &source, &sourcePort, &destination, &destinationPort)
            if count == -Int(EBADMSG) {
                dropped()
                continue
            }
            guard count >= 0 else { return nil }
            let length = family == 4 ? 4 : 16
            return Datagram(
                source: SocketAddress(address: Array(source[0..<length]), port: sourcePort),
                destination: SocketAddress(address: Array(destination[0..<length]), port: destinationPort),
                payload: Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
        }
    }

    /// A socket for one flow of datagrams: bound (transparently) to where the app sent them,
    /// connected to the app; the kernel gives it the flow's further datagrams, and what is
    /// written on it reaches the app from the address it sent to. Blocking.
    public static func flowSocket(for datagram: Datagram) throws(SystemError) -> Int32 {
        let result = datagram.destination.address.withUnsafeBufferPointer { destination in
            datagram.source.address.withUnsafeBufferPointer { source in
                netext_udp_flow_socket(datagram.source.isIPv6 ? 6 : 4, destination.baseAddress, datagram.destination.port, source.baseAddress, datagram.source.port)
            }
        }
        guard result >= 0 else { throw SystemError("UDP flow socket", errno: -result, subject: "\(datagram.destination) ← \(datagram.source)") }
        return result
    }
}

/// An app proxy's listeners (TCP and UDP; IPv4, and IPv6 where the machine has it) and a way to
/// stop the thread that waits on them.
public final class TransparentListenerSet: @unchecked Sendable {
    public let ipv4: TransparentListener
    public let ipv6: TransparentListener?
    public let udp4: TransparentDatagramSocket?
    public let udp6: TransparentDatagramSocket?
    /// A transparent proxy's listeners for inbound connections (other machines' connections to
    /// services here, its inbound rules); nil where not asked for.
    public let inbound4: TransparentListener?
    public let inbound6: TransparentListener?
    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// Opens both listeners on free ports (IPv6 is left out where ::1 cannot be bound), and with
    /// `inbound` a second pair for inbound connections.
    public init(inbound: Bool = false) throws(SystemError) {
        ipv4 = try TransparentListener(ipv6: false)
        ipv6 = try? TransparentListener(ipv6: true)
        inbound4 = inbound ? try TransparentListener(ipv6: false) : nil
        inbound6 = inbound ? try? TransparentListener(ipv6: true) : nil
        udp4 = try? TransparentDatagramSocket(ipv6: false)
        udp6 = try? TransparentDatagramSocket(ipv6: true)
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

    /// What one wait brought: accepted connections and first datagrams of flows.
    public struct Arrivals: Sendable {
        public var connections: [Int32] = []
        /// Connections accepted on the inbound listeners.
        public var inboundConnections: [Int32] = []
        public var datagrams: [TransparentDatagramSocket.Datagram] = []
    }

    /// Waits (at most `milliseconds`) and takes what is waiting, at most `limit` of each kind;
    /// nil once `stop()` was called. Accept failures (out of descriptors) are reported through
    /// `failed` and the wait goes on after a pause, so a full table is not a busy loop; a
    /// datagram without its original destination through `dropped`.
    public func wait(milliseconds: Int32, limit: Int = 64, buffer: UnsafeMutableRawBufferPointer, failed: (SystemError) -> Void, dropped: () -> Void) -> Arrivals? {
        let inbound = [inbound4, inbound6].compactMap { $0 }
        let listeners = [ipv4, ipv6].compactMap { $0 } + inbound
        let datagramSockets = [udp4, udp6].compactMap { $0 }
        var pollers = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        pollers += listeners.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        pollers += datagramSockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&pollers, nfds_t(pollers.count), milliseconds)
        if pollers[0].revents != 0 { return nil }
        var arrivals = Arrivals()
        guard ready > 0 else { return arrivals }
        let outboundCount = listeners.count - inbound.count
        for (index, listener) in listeners.enumerated() where pollers[index + 1].revents != 0 {
            let isInbound = index >= outboundCount
            while (isInbound ? arrivals.inboundConnections.count : arrivals.connections.count) < limit {
                do {
                    guard let fd = try listener.accept() else { break }
                    if isInbound { arrivals.inboundConnections.append(fd) } else { arrivals.connections.append(fd) }
                } catch {
                    failed(error)
                    usleep(50_000)
                    break
                }
            }
        }
        for (index, socket) in datagramSockets.enumerated() where pollers[index + 1 + listeners.count].revents != 0 {
            while arrivals.datagrams.count < limit, let datagram = socket.receive(into: buffer, dropped: dropped) {
                arrivals.datagrams.append(datagram)
            }
        }
        return arrivals
    }

    /// Closes both listeners; called by the accepting thread once `accept` returned nil.
    public func close() {
        ipv4.close()
        ipv6?.close()
        udp4?.close()
        udp6?.close()
        inbound4?.close()
        inbound6?.close()
    }

    /// Makes the waiting `accept` return nil (now and from now on).
    public func stop() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

}
