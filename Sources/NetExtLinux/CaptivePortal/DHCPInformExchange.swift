import NetExtCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One DHCPINFORM exchange on an interface (RFC 2131 §3.4): the request broadcast from port 68 to
/// port 67 on that interface only (`SO_BINDTODEVICE`), the server's DHCPACK awaited for the same
/// transaction. Needs root (port 68, binding to a device). Sent up to `attempts` times, a second
/// apart at first, as RFC 2131 §4.1 has clients retransmit; malformed or foreign datagrams are
/// skipped and counted.
public enum DHCPInformExchange {
    public typealias Outcome = DatagramExchange.Outcome<DHCPv4Message>

    /// One exchange at a time in the process: two sockets bound to port 68 would each get only
    /// some of the answers (the kernel gives a unicast datagram to one of them).
    private static let oneAtATime = Mutex(())

    public static func run(interface: String, identity: InterfaceIdentity, requesting: [UInt8], attempts: Int = 3, waitMilliseconds: Int = 1000) throws(SystemError) -> Outcome {
        try oneAtATime.withLock { _ throws(SystemError) in try exchange(interface: interface, identity: identity, requesting: requesting, attempts: attempts, waitMilliseconds: waitMilliseconds) }
    }

    private static func exchange(interface: String, identity: InterfaceIdentity, requesting: [UInt8], attempts: Int, waitMilliseconds: Int) throws(SystemError) -> Outcome {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno, subject: "DHCP on \(interface)") }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, socklen_t(MemoryLayout<Int32>.size))
        try InterfaceSocket.bind(fd, to: interface)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_port = UInt16(68).bigEndian
        let bindResult = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bindResult == 0 else { throw SystemError("bind", errno: errno, subject: "UDP port 68 on \(interface)") }

        let transactionID = UInt32.random(in: 1...UInt32.max)
        let request = DHCPv4Message.inform(
            transactionID: transactionID, clientAddress: identity.ipv4Address, hardwareAddress: identity.hardwareAddress, requesting: requesting)
        var server = sockaddr_in()
        server.sin_family = sa_family_t(AF_INET)
        server.sin_port = UInt16(67).bigEndian
        server.sin_addr.s_addr = UInt32.max  // 255.255.255.255
        return try DatagramExchange.run(fd, attempts: attempts, waitMilliseconds: waitMilliseconds, send: { () throws(SystemError) in
            let sent = request.withUnsafeBytes { bytes in
                withUnsafePointer(to: &server) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            }
            guard sent == request.count else { throw SystemError("sendto", errno: errno, subject: "DHCPINFORM on \(interface)") }
        }, parse: { datagram throws(CaptivePortalError) in try DHCPv4Message.parse(datagram.bytes) }) { message in message.operation == 2 && message.transactionID == transactionID && message.messageType == .ack }
    }
}
