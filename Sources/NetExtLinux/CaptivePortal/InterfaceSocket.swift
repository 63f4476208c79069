import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// What the captive portal exchanges do to a socket of theirs: tie it to one interface, send to a
/// link-scope IPv6 multicast group out of it, or connect over TCP from it.
public enum InterfaceSocket {
    /// `SO_BINDTODEVICE`: the socket sends and receives on `interface` alone, whatever the
    /// routing table says (needs `CAP_NET_RAW` before Linux 5.7).
    public static func bind(_ fd: Int32, to interface: String) throws(SystemError) {
        let bound = interface.withCString { setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, $0, socklen_t(strlen($0) + 1)) }
        guard bound == 0 else { throw SystemError("setsockopt(SO_BINDTODEVICE)", errno: errno, subject: interface) }
    }

    /// Sends `bytes` to the link-scope multicast `group` (16 bytes) at `port` out of the
    /// interface numbered `interfaceIndex`; `what` names the message in the error.
    static func send(_ fd: Int32, _ bytes: [UInt8], toGroup group: [UInt8], port: UInt16, interfaceIndex: UInt32, what: String) throws(SystemError) {
        var multicastInterface = Int32(interfaceIndex)
        setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_MULTICAST_IF, &multicastInterface, socklen_t(MemoryLayout<Int32>.size))
        var destination = sockaddr_in6()
        destination.sin6_family = sa_family_t(AF_INET6)
        destination.sin6_port = port.bigEndian
        destination.sin6_scope_id = interfaceIndex
        withUnsafeMutableBytes(of: &destination.sin6_addr) { $0.copyBytes(from: group) }
        let sent = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &destination) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
        guard sent == bytes.count else { throw SystemError("sendto", errno: errno, subject: what) }
    }

    /// A TCP connection to `host` and `port` — to `address` (a numeric address) when one is
    /// given, else `host` looked up with the system's resolver —, out of `interface` when one is
    /// named (`SO_BINDTODEVICE`) and with `mark` (`SO_MARK`, by which a traffic guard lets it
    /// pass; without `CAP_NET_ADMIN` none is set). Connecting, and each send and receive on the
    /// blocking socket, waits at most `timeoutMilliseconds`. The caller owns (and closes) the
    /// descriptor.
    public static func connectTCP(
        host: String, address: String? = nil, port: UInt16, interface: String?, mark: UInt32?, timeoutMilliseconds: Int
    ) throws(SystemError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        if address != nil { hints.ai_flags = AI_NUMERICHOST }
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(address ?? host, String(port), &hints, &result) == 0, let first = result else {
            throw SystemError("getaddrinfo", errno: ENOENT, subject: address ?? host)
        }
        defer { freeaddrinfo(first) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno, subject: host) }
        do throws(SystemError) {
            if let interface { try bind(fd, to: interface) }
            if let mark { _ = setSocketMark(fd, mark) }
            var timeout = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
                throw SystemError("connect", errno: errno, subject: "\(host):\(port)\(interface.map { " on \($0)" } ?? "")")
            }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// Sends `datagram` to `server` (a numeric IPv4 or IPv6 address; a link-local IPv6 one is
    /// taken to be on `interface`) at `port` from a UDP socket bound to
    /// `interface` and carrying `mark`, and returns the first datagram that comes back from that
    /// address and port (the socket is connected: the kernel passes over others) within
    /// `timeoutMilliseconds`; nil when none came.
    public static func exchangeDatagram(
        _ datagram: [UInt8], server: String, port: UInt16, interface: String?, mark: UInt32?, timeoutMilliseconds: Int
    ) throws(SystemError) -> [UInt8]? {
        guard let bytes = IPPrefix.parseAddress(server) else {
            throw SystemError("inet_pton", errno: EINVAL, subject: "\(server) is not an IPv4 or IPv6 address")
        }
        let destination = SocketAddress(address: bytes, port: port)
        // A link-local server (fe80::/10, as a router's RDNSS may name) is on this interface.
        let linkLocal = bytes.count == 16 && bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
        let scope = linkLocal ? interface.map { if_nametoindex($0) } ?? 0 : 0
        let fd = socket(destination.isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno, subject: server) }
        defer { close(fd) }
        if let interface { try bind(fd, to: interface) }
        if let mark { _ = setSocketMark(fd, mark) }
        let connected = destination.withSockaddr(scopeID: scope) { connect(fd, $0, $1) }
        guard connected == 0 else { throw SystemError("connect", errno: errno, subject: "\(server):\(port)") }
        let sent = datagram.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == datagram.count else { throw SystemError("send", errno: errno, subject: "\(server):\(port)") }
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        let deadline = Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1e6 + Double(timeoutMilliseconds)
        var buffer = [UInt8](repeating: 0, count: 65_535)
        while true {
            clock_gettime(CLOCK_MONOTONIC, &time)
            let remaining = deadline - (Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1e6)
            guard remaining > 0 else { return nil }
            guard PacketIO.waitReadable(fd, milliseconds: Int32(min(remaining + 1, 60_000))) else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count >= 0 { return Array(buffer[..<count]) }
            // An ICMP error (ECONNREFUSED: nothing listens there) ends the wait; a signal does not.
            if errno == EINTR || errno == EAGAIN { continue }
            throw SystemError("recv", errno: errno, subject: "\(server):\(port)")
        }
    }
}
