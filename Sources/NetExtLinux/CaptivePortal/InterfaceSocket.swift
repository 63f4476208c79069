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

    /// A TCP connection to `host` (a name is looked up with the system's resolver) and `port`,
    /// out of `interface` when one is named (`SO_BINDTODEVICE`) and with `mark` (`SO_MARK`, by
    /// which a traffic guard lets it pass; without `CAP_NET_ADMIN` none is set). Connecting,
    /// and each send and receive on the blocking socket, waits at most `timeoutMilliseconds`.
    /// The caller owns (and closes) the descriptor.
    public static func connectTCP(host: String, port: UInt16, interface: String?, mark: UInt32?, timeoutMilliseconds: Int) throws(SystemError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
            throw SystemError("getaddrinfo", errno: ENOENT, subject: host)
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
}
