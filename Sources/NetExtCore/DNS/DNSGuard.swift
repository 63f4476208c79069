/// While system DNS settings prohibit other DNS (`prohibitsOtherDNS`, the profile key
/// `ProhibitDisablement`): DNS from any program but netextd's resolver — UDP and TCP to ports 53
/// and 853 — is refused at output (a TCP reset, an ICMP port unreachable), so that no program
/// goes around the settings with a resolver of its own. Destinations on this machine (netextd's
/// stub, a local cache: loopback, or out through `lo`) and packets with netextd's resolver mark
/// pass. DNS over HTTPS (port 443) cannot be told from other HTTPS and is not blocked.
public struct DNSGuard: Sendable, Hashable {
    public static let tableName = "netextd_dns"
    /// The mark (`SO_MARK`) on the sockets netextd's resolver sends queries from, under
    /// ``FlowSteering/markMask`` (tunnel slots use 0x80–0xFF, proxies 0x40–0x7F, netextd's proxy
    /// bypass 0x01): it routes nothing, it only names the resolver's packets.
    public static let resolverMark: UInt32 = 0x02 << 16

    public var isActive: Bool

    public init(isActive: Bool) {
        self.isActive = isActive
    }

    /// The nftables script that replaces the table in one transaction.
    public var ruleset: String {
        [
            "add table inet \(Self.tableName)",
            "flush table inet \(Self.tableName)",
            "table inet \(Self.tableName) {",
            "  chain output {",
            "    type filter hook output priority filter; policy accept;",
            "    \(FlowSteering.markMatch(Self.resolverMark)) return",
            "    ip daddr 127.0.0.0/8 return",
            "    ip6 daddr ::1 return",
            // This machine's own addresses (netextd's stub on its link under systemd-resolved):
            // such packets leave through loopback and never reach a network.
            "    oifname \"lo\" return",
            "    tcp dport { 53, 853 } counter reject with tcp reset",
            "    udp dport { 53, 853 } counter reject",
            "  }",
            "}",
        ].joined(separator: "\n") + "\n"
    }
}
