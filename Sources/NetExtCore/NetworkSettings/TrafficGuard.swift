import Foundation

/// The packet filter netextd keeps while configurations with `includeAllNetworks` (kill switch)
/// or `enforceRoutes` are enabled: one nftables table of its own, `inet netextd_guard`, whose
/// output chain lets through loopback, the tunnel interfaces, the providers' own traffic (their
/// user id: the encrypted packets to the VPN server), IPv6 neighbour discovery and DHCP (a lease
/// must be renewed whatever the tunnel does), and drops the rest — whether the tunnel is up,
/// reconnecting, or its provider has died. It stays until the configuration is disabled or
/// removed, and across a netextd crash (the kernel keeps it).
///
/// Behind a captive portal the tunnel cannot come up until someone logs in: a portal login
/// (`PortalLogin`) lets one user's programs out on one interface for a while, and netextd's own
/// captive portal detection passes by its mark (`detectionMark`) — everything else stays held.
public struct TrafficGuard: Sendable, Hashable {
    public struct Member: Sendable, Hashable {
        public var configuration: UUID
        /// The provider's user id: its sockets may send outside the tunnel.
        public var providerUID: UInt32
        /// `includeAllNetworks`: nothing else leaves outside the tunnel.
        public var blocksAll: Bool
        /// With `blocksAll` and `excludeLocalNetworks`: subnets still reachable directly.
        public var localNetworks: [IPPrefix]
        /// `enforceRoutes`: these destinations never leave outside the tunnel.
        public var enforcedRoutes: [IPPrefix]
        /// A tunnel that routes by app: its apps' mark. In exclude mode they may leave outside the
        /// tunnel; in include mode (a per-app VPN) `blocksAll` covers only them, since only their
        /// flows belong in the tunnel.
        public var apps: FlowSteering.Marking?

        public init(configuration: UUID, providerUID: UInt32, blocksAll: Bool, localNetworks: [IPPrefix] = [], enforcedRoutes: [IPPrefix] = [], apps: FlowSteering.Marking? = nil) {
            self.configuration = configuration
            self.providerUID = providerUID
            self.blocksAll = blocksAll
            self.localNetworks = localNetworks
            self.enforcedRoutes = enforcedRoutes
            self.apps = apps
        }
    }

    /// A user whose programs may reach one interface directly for a while, to log in to a captive
    /// portal with the kill switch on (`netext hotspot allow-login`).
    public struct PortalLogin: Sendable, Hashable {
        public var uid: UInt32
        public var interface: String

        public init(uid: UInt32, interface: String) {
            self.uid = uid
            self.interface = interface
        }
    }

    /// The mark of netextd's own captive portal detection sockets (the connectivity check), in the
    /// steering's bits: they pass the guard on the interface they are bound to.
    public static let detectionMark: UInt32 = 0x03 << 16

    public static let tableName = "netextd_guard"
    /// The tunnel interfaces netextd creates (`netext0`, `netext1`, …).
    public static let tunnelInterfacePattern = "netext*"

    public var members: [Member]
    /// Portal logins in force; they matter only while something is blocked.
    public var portalLogins: [PortalLogin]

    public init(members: [Member] = [], portalLogins: [PortalLogin] = []) {
        self.members = members
        self.portalLogins = portalLogins
    }

    /// Whether there is anything to enforce.
    public var isActive: Bool { members.contains { $0.blocksAll || !$0.enforcedRoutes.isEmpty } }

    /// Whether the output chain of `ruleset` drops a packet to `destination` (4 or 16 bytes)
    /// that an ordinary program (not a provider) sends on an interface that is neither loopback
    /// nor a tunnel: the same decision as the rules, for fakes that play the kernel. Enforced
    /// routes drop first; then, with `blocksAll`, everything but the local networks.
    /// A packet with `mark` is an app's flow: an excluded app's passes; a per-app VPN's kill
    /// switch drops only its own apps' packets.
    /// A packet from `uid` on `interface` that a portal login names passes, as does netextd's
    /// detection (its mark); DHCP is not modelled here (the rules pass it).
    public func dropsDirectPacket(to destination: [UInt8], mark: UInt32 = 0, uid: UInt32? = nil, interface: String? = nil) -> Bool {
        if mark & FlowSteering.markMask == Self.detectionMark { return false }
        if let interface, portalLogins.contains(where: { $0.uid == uid && $0.interface == interface }) { return false }
        let host = IPPrefix(address: destination, length: destination.count * 8)
        let appMark = mark & FlowSteering.markMask
        if appMark != 0, members.contains(where: { $0.apps?.mode == .exclude && $0.apps?.mark == appMark }) { return false }
        if members.flatMap(\.enforcedRoutes).contains(where: { $0.contains(host) }) { return true }
        let blocking = members.filter { $0.blocksAll && ($0.apps?.mode != .include || $0.apps?.mark == appMark) }
        guard !blocking.isEmpty else { return false }
        return !blocking.flatMap(\.localNetworks).contains { $0.contains(host) }
    }

    /// The complete `nft -f` input that (re)defines the table in one transaction.
    public var ruleset: String {
        var lines = [
            "add table inet \(Self.tableName)",
            "flush table inet \(Self.tableName)",
            "table inet \(Self.tableName) {",
            "  chain output {",
            "    type filter hook output priority filter; policy accept;",
            "    oifname \"lo\" accept",
            "    oifname \"\(Self.tunnelInterfacePattern)\" accept",
        ]
        let uids = Set(members.map(\.providerUID)).sorted()
        if !uids.isEmpty { lines.append("    meta skuid { \(uids.map(String.init).joined(separator: ", ")) } accept") }
        lines.append("    icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } accept")
        // DHCP (RFC 2131 §4.1 ports; DHCPv6, RFC 8415 §7.2): leases renew, and captive portal
        // detection asks the network's server (a DHCPINFORM).
        lines.append("    udp sport 68 udp dport 67 accept")
        lines.append("    udp sport 546 udp dport 547 accept")
        for login in Set(portalLogins).sorted(by: { ($0.uid, $0.interface) < ($1.uid, $1.interface) }) {
            lines.append("    meta skuid \(login.uid) oifname \(Self.quoted(login.interface)) accept")
        }
        lines.append("    \(FlowSteering.markMatch(Self.detectionMark)) accept")
        // Apps a tunnel excludes leave directly, past every drop below.
        for mark in Set(members.compactMap { $0.apps?.mode == .exclude ? $0.apps?.mark : nil }).sorted() {
            lines.append("    \(FlowSteering.markMatch(mark)) accept")
        }
        // Enforced routes first: they win even over local networks.
        let enforced = members.flatMap(\.enforcedRoutes)
        lines += Self.rules(for: enforced, verdict: "counter drop")
        let blocking = members.filter(\.blocksAll)
        if !blocking.isEmpty {
            lines += Self.rules(for: blocking.flatMap(\.localNetworks), verdict: "accept")
            if blocking.contains(where: { $0.apps?.mode != .include }) {
                lines.append("    counter drop")
            } else {
                // Only per-app VPNs: their kill switch holds their own apps' flows.
                for mark in Set(blocking.compactMap(\.apps?.mark)).sorted() {
                    lines.append("    \(FlowSteering.markMatch(mark)) counter drop")
                }
            }
        }
        lines += ["  }", "}"]
        return lines.joined(separator: "\n") + "\n"
    }

    /// An interface name as an nft string (names are checked with `InterfaceName` before they get
    /// here; quotes and backslashes are dropped all the same).
    static func quoted(_ interface: String) -> String {
        "\"" + interface.filter { $0 != "\"" && $0 != "\\" } + "\""
    }

    /// One rule per prefix (an anonymous set would refuse overlapping prefixes).
    static func rules(for prefixes: [IPPrefix], verdict: String) -> [String] {
        var seen = Set<IPPrefix>()
        return prefixes.map(\.network).filter { seen.insert($0).inserted }.sorted { ($0.isIPv6 ? 1 : 0, $0.description) < ($1.isIPv6 ? 1 : 0, $1.description) }.map {
            "    \($0.isIPv6 ? "ip6" : "ip") daddr \($0) \(verdict)"
        }
    }
}
