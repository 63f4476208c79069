import NetExtCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One DHCPv6 Information-Request exchange on an interface (RFC 8415 §18.2.6): the request sent
/// from port 546 to All_DHCP_Relay_Agents_and_Servers (ff02::1:2) port 547 out of that interface
/// only, from its link-local address, and the Reply with the same transaction ID awaited. Needs
/// root (port 546, binding to a device). Sent up to `attempts` times, the wait doubling (§15);
/// malformed or foreign datagrams are skipped and counted.
public enum DHCPv6InformationExchange {
    public typealias Outcome = DatagramExchange.Outcome<DHCPv6Message>

    private static let oneAtATime = Mutex(())
    /// ff02::1:2 (RFC 8415 §7.1).
    static let allServers: [UInt8] = [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2]

    public static func run(interface: String, hardwareAddress: [UInt8], requesting: [UInt16], attempts: Int = 2, waitMilliseconds: Int = 1000) throws(SystemError) -> Outcome {
        try oneAtATime.withLock { _ throws(SystemError) in
            try exchange(interface: interface, hardwareAddress: hardwareAddress, requesting: requesting, attempts: attempts, waitMilliseconds: waitMilliseconds)
        }
    }

    private static func exchange(interface: String, hardwareAddress: [UInt8], requesting: [UInt16], attempts: Int, waitMilliseconds: Int) throws(SystemError) -> Outcome {
        let index = if_nametoindex(interface)
        guard index != 0 else { throw SystemError("if_nametoindex", errno: errno, subject: interface) }
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno, subject: "DHCPv6 on \(interface)") }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        try InterfaceSocket.bind(fd, to: interface)
        var local = sockaddr_in6()
        local.sin6_family = sa_family_t(AF_INET6)
        local.sin6_port = UInt16(546).bigEndian
        let bindResult = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        guard bindResult == 0 else { throw SystemError("bind", errno: errno, subject: "UDP port 546 on \(interface)") }

        let transactionID = UInt32.random(in: 1...0xff_ffff)
        let request = DHCPv6Message.informationRequest(transactionID: transactionID, hardwareAddress: hardwareAddress, requesting: requesting)
        return try DatagramExchange.run(fd, attempts: attempts, waitMilliseconds: waitMilliseconds, send: { () throws(SystemError) in
            try InterfaceSocket.send(fd, request, toGroup: allServers, port: 547, interfaceIndex: index, what: "DHCPv6 Information-Request on \(interface)")
        }, parse: { datagram throws(CaptivePortalError) in try DHCPv6Message.parse(datagram.bytes) }) { message in message.type == DHCPv6Message.MessageType.reply.rawValue && message.transactionID == transactionID }
    }
}
