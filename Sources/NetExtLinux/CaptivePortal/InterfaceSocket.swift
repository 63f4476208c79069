import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// What the captive portal exchanges do to a socket of theirs: tie it to one interface, and send
/// to a link-scope IPv6 multicast group out of it.
enum InterfaceSocket {
    /// `SO_BINDTODEVICE`: the socket sends and receives on `interface` alone, whatever the
    /// routing table says (needs `CAP_NET_RAW` before Linux 5.7).
    static func bind(_ fd: Int32, to interface: String) throws(SystemError) {
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
}
