import CNetExtLinux
import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 socket address (numeric host and port).
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 or 16 address bytes.
    public let address: [UInt8]
    public let port: UInt16

    public init(address: [UInt8], port: UInt16) {
        self.address = address
        self.port = port
    }

    /// Parses `1.2.3.4:51900` or `[fd00::1]:51900`.
    public init?(_ text: String) {
        var host = Substring(text)
        var portText: Substring
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]"), host[host.index(after: close)...].hasPrefix(":") else { return nil }
            portText = host[host.index(close, offsetBy: 2)...]
            host = host[host.index(after: host.startIndex)..<close]
        } else {
            guard let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon else { return nil }
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard let port = UInt16(portText), let bytes = IPPrefix.parseAddress(String(host)) else { return nil }
        self.init(address: bytes, port: port)
    }

    public var isIPv6: Bool { address.count == 16 }

    /// Whether the address is a loopback one (127.0.0.0/8, ::1).
    public var isLoopback: Bool { isIPv6 ? address == [UInt8](repeating: 0, count: 15) + [1] : address.first == 127 }

    /// Address then port, as bytes (what a cookie is computed over).
    public var bytes: [UInt8] { address + [UInt8(port >> 8), UInt8(port & 0xff)] }

    public var hostText: String { IPPrefix.format(address) }

    public var description: String { isIPv6 ? "[\(hostText)]:\(port)" : "\(hostText):\(port)" }

    /// Calls `body` with this address as a `sockaddr`; `scopeID` is an IPv6 address's interface
    /// index (RFC 4007 §6: a link-local address is ambiguous without one).
    func withSockaddr<T>(scopeID: UInt32 = 0, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        if isIPv6 {
            var storage = sockaddr_in6()
            storage.sin6_family = sa_family_t(AF_INET6)
            storage.sin6_port = port.bigEndian
            storage.sin6_scope_id = scopeID
            withUnsafeMutableBytes(of: &storage.sin6_addr) { $0.copyBytes(from: address) }
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
        var storage = sockaddr_in()
        storage.sin_family = sa_family_t(AF_INET)
        storage.sin_port = port.bigEndian
        withUnsafeMutableBytes(of: &storage.sin_addr) { $0.copyBytes(from: address) }
        return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }

    /// Reads an address the kernel filled in.
    static func from(_ storage: sockaddr_storage) -> SocketAddress? {
        var copy = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                    var address = pointer.pointee.sin_addr
                    return SocketAddress(address: withUnsafeBytes(of: &address) { Array($0) }, port: UInt16(bigEndian: pointer.pointee.sin_port))
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    var address = pointer.pointee.sin6_addr
                    let bytes = withUnsafeBytes(of: &address) { Array($0) }
                    // Report IPv4-mapped IPv6 peers as plain IPv4.
                    if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                        return SocketAddress(address: Array(bytes[12..<16]), port: UInt16(bigEndian: pointer.pointee.sin6_port))
                    }
                    return SocketAddress(address: bytes, port: UInt16(bigEndian: pointer.pointee.sin6_port))
                }
            }
        default:
            return nil
        }
    }
}

extension SocketAddress {
    /// Resolves `host` (a name or a numeric address) with the system resolver (getaddrinfo:
    /// /etc/hosts, then DNS), IPv4 answers first; throws with the resolver's message.
    public static func resolve(host: String, port: UInt16) throws(SystemError) -> [SocketAddress] {
        if let bytes = IPPrefix.parseAddress(host) { return [SocketAddress(address: bytes, port: port)] }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &result)
        guard status == 0, let first = result else {
            throw SystemError("resolve", errno: EHOSTUNREACH, subject: "\(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let raw = current.pointee.ai_addr {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: Int(current.pointee.ai_addrlen))) }
                if let address = SocketAddress.from(storage) {
                    let withPort = SocketAddress(address: address.address, port: port)
                    if !addresses.contains(withPort) { addresses.append(withPort) }
                }
            }
            entry = current.pointee.ai_next
        }
        return addresses.sorted { !$0.isIPv6 && $1.isIPv6 }
    }
}
