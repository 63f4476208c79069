import NetExtCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Router solicitation on an interface for its captive portal announcement (RFC 8910 §2.3): a
/// Router Solicitation to all-routers (ff02::2) out of that interface only, hop limit 255 (RFC
/// 4861 §6.3.7), and the Router Advertisements that answer it read on a raw ICMPv6 socket that
/// lets only type 134 through. Each is checked as RFC 4861 §6.1.2 says (link-local source, hop
/// limit 255, code 0); the first whose Captive-Portal option (37) reads is the answer.
/// Advertisements without the option, and malformed or foreign ones, are counted. Needs root
/// (a raw socket, binding to a device).
public enum RouterSolicitationExchange {
    public typealias Outcome = DatagramExchange.Outcome<CaptivePortalAnnouncement>

    private static let oneAtATime = Mutex(())
    /// ff02::2 (RFC 4291 §2.7.1).
    static let allRouters: [UInt8] = [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    /// `ICMP6_FILTER` (netinet/icmp6.h), which Glibc's module does not carry.
    static let icmp6Filter: Int32 = 1

    /// What the solicitation brought: the first announcement (the outcome's reply) and the DNS
    /// servers every advertisement read before it named (RDNSS, RFC 8106 §5.1), in order, once each.
    public struct Answer: Sendable {
        public var outcome: Outcome
        public var dnsServers: [String]
    }

    public static func run(interface: String, hardwareAddress: [UInt8], attempts: Int = 2, waitMilliseconds: Int = 700) throws(SystemError) -> Answer {
        try oneAtATime.withLock { _ throws(SystemError) in
            try exchange(interface: interface, hardwareAddress: hardwareAddress, attempts: attempts, waitMilliseconds: waitMilliseconds)
        }
    }

    /// Lets only Router Advertisements reach a raw ICMPv6 socket (RFC 3542 §3.2: a set bit
    /// blocks a type) and has each one's hop limit told (`IPV6_RECVHOPLIMIT`).
    static func readAdvertisementsOnly(_ fd: Int32, subject: String) throws(SystemError) {
        var filter = [UInt32](repeating: 0xffff_ffff, count: 8)
        filter[Int(RouterDiscovery.advertisementType) >> 5] &= ~(UInt32(1) << (UInt32(RouterDiscovery.advertisementType) & 31))
        guard setsockopt(fd, Int32(IPPROTO_ICMPV6), icmp6Filter, &filter, socklen_t(32)) == 0 else {
            throw SystemError("setsockopt(ICMP6_FILTER)", errno: errno, subject: subject)
        }
        var on: Int32 = 1
        guard setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_RECVHOPLIMIT, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw SystemError("setsockopt(IPV6_RECVHOPLIMIT)", errno: errno, subject: subject)
        }
    }

    private static func exchange(interface: String, hardwareAddress: [UInt8], attempts: Int, waitMilliseconds: Int) throws(SystemError) -> Answer {
        let index = if_nametoindex(interface)
        guard index != 0 else { throw SystemError("if_nametoindex", errno: errno, subject: interface) }
        let fd = socket(AF_INET6, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Int32(IPPROTO_ICMPV6))
        guard fd >= 0 else { throw SystemError("socket", errno: errno, subject: "ICMPv6 on \(interface)") }
        defer { close(fd) }
        try InterfaceSocket.bind(fd, to: interface)
        try readAdvertisementsOnly(fd, subject: interface)
        var hops: Int32 = 255
        setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_MULTICAST_HOPS, &hops, socklen_t(MemoryLayout<Int32>.size))

        let solicitation = RouterDiscovery.solicitation(hardwareAddress: hardwareAddress)
        var servers: [String] = []
        // Each advertisement read: refused (RFC 4861 §6.1.2), without option 37 (nil), or its announcement.
        let read = try DatagramExchange.run(fd, attempts: attempts, waitMilliseconds: waitMilliseconds, send: { () throws(SystemError) in
            try InterfaceSocket.send(fd, solicitation, toGroup: allRouters, port: 0, interfaceIndex: index, what: "Router Solicitation on \(interface)")
        }, parse: { datagram throws(CaptivePortalError) -> CaptivePortalAnnouncement? in
            let address = datagram.ipv6Source?.address ?? []
            if let problem = RouterDiscovery.advertisementProblem(datagram.bytes, source: address, hopLimit: datagram.hopLimit) { throw CaptivePortalError(problem) }
            // Only from an advertisement that passed those checks (a forged one names no servers);
            // a malformed RDNSS option costs its servers, not the advertisement's announcement.
            for server in (try? RouterDiscovery.recursiveDNSServers(in: datagram.bytes)) ?? [] where !servers.contains(server) { servers.append(server) }
            return try CaptivePortalAnnouncement.fromRouterAdvertisement(datagram.bytes)
        }) { announcement in announcement != nil }
        return Answer(outcome: Outcome(reply: read.reply ?? nil, ignored: read.ignored, lastProblem: read.lastProblem), dnsServers: servers)
    }
}
