import Foundation

/// Steering flows by the app they come from (DESIGN.md, "Flows"): the nftables table netextd
/// keeps while tunnels with app rules are connected, `inet netextd_apps`. Each tunnel (a
/// ``Member``) has a set of cgroup v2 IDs — the cgroups of its apps, added as they appear, so
/// the rules never change when cgroups come and go — and a mark; a `type route` output chain
/// marks the packets of sockets created in those cgroups, and policy rules
/// (``NetworkPlan/AppRouting``) send marked packets into the tunnel (include mode) or around it
/// (exclude mode). Where an eBPF program marks an app's sockets as they are created
/// (``Member/socketMarked``), the table has nothing to do for that cgroup, and without a nat
/// chain the namespace runs without connection tracking. Pure: it computes the ruleset;
/// netextd's network worker installs it.
///
/// The kernel's `socket cgroupv2 level N` compares the ancestor at depth N of the socket's
/// cgroup, so there is one rule per depth the set's cgroups sit at, each looking up the same set.
public struct FlowSteering: Sendable, Hashable {
    public static let tableName = "netextd_apps"
    /// The mark bits the steering owns (the content filter's verdicts use 0x6800_0000).
    public static let markMask: UInt32 = 0x00FF_0000
    /// The most tunnels steered at once (one mark each).
    public static let maximumSlots = 0x7F

    /// The mark of the tunnel in netextd's slot `slot`.
    public static func mark(slot: Int) -> UInt32 {
        precondition((0...maximumSlots).contains(slot), "slot \(slot) has no steering mark")
        return UInt32(0x80 | slot) << 16
    }

    /// The netfilter log group of per-app on demand for the tunnel with `mark` (the content
    /// filter's DNS log is group 7100).
    public static func onDemandLogGroup(mark: UInt32) -> UInt16 { 7200 + UInt16((mark >> 16) & 0x7F) }

    /// A steered tunnel's mark and whether its apps go into it or around it.
    public struct Marking: Sendable, Hashable {
        public var mode: Mode
        public var mark: UInt32
        public init(mode: Mode, mark: UInt32) {
            self.mode = mode
            self.mark = mark
        }
    }

    /// The nft match of packets carrying `mark` in the steering's bits.
    public static func markMatch(_ mark: UInt32) -> String { "meta mark & \(hex(markMask)) == \(hex(mark))" }

    /// `0x00810000`: how `ip rule` and nft write marks.
    public static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    public enum Mode: String, Sendable, Hashable, Codable {
        /// Only the apps' flows enter the tunnel (a per-app VPN).
        case include
        /// The apps' flows bypass a tunnel that takes everything else.
        case exclude
        /// The apps' TCP flows go to an app proxy provider: the route chain marks them, a policy
        /// rule sends marked packets to the local table (``FlowSteering/proxyTable``), and a
        /// prerouting `tproxy` rule hands them to netextd's transparent listeners, so the kernel
        /// terminates the connection and netextd passes the socket to the provider.
        case proxy
    }

    /// The routing table whose only route is `local` for every destination: where an app
    /// proxy's marked packets are looked up, so they are delivered to this machine (and
    /// `tproxy`'s listener) instead of leaving. Policy rules at priority ``proxyRulePriority``,
    /// one per app proxy's mark, lead there; before every tunnel's rules.
    public static let proxyTable = 7099
    public static let proxyRulePriority = 7099
    /// The netfilter log group that gets a copy of every DNS answer (UDP from port 53) arriving
    /// while an app proxy runs: the names its flows' addresses were looked up as.
    public static let proxyDNSLogGroup: UInt16 = 7099

    /// Where an app proxy's transparent listeners wait, on 127.0.0.1 and ::1.
    public struct ProxyPorts: Sendable, Hashable {
        public var tcp4: UInt16
        public var tcp6: UInt16?
        /// The UDP sockets (app proxies); nil: the apps' UDP is not taken.
        public var udp4: UInt16?
        public var udp6: UInt16?
        /// A transparent proxy's listeners for inbound connections (its inbound rules); nil: none.
        public var inbound4: UInt16?
        public var inbound6: UInt16?
        public init(tcp4: UInt16, tcp6: UInt16?, udp4: UInt16? = nil, udp6: UInt16? = nil, inbound4: UInt16? = nil, inbound6: UInt16? = nil) {
            self.tcp4 = tcp4
            self.tcp6 = tcp6
            self.udp4 = udp4
            self.udp6 = udp6
            self.inbound4 = inbound4
            self.inbound6 = inbound6
        }
    }

    /// A resolver of netextd's on loopback for some apps' DNS: `port` on 127.0.0.1, and the same
    /// port on ::1 when `hasIPv6`.
    public struct LoopbackResolver: Sendable, Hashable {
        public var port: UInt16
        public var hasIPv6: Bool
        public init(port: UInt16, hasIPv6: Bool) {
            self.port = port
            self.hasIPv6 = hasIPv6
        }
    }

    /// One cgroup of an app, as a path relative to the cgroup v2 root (`netext-apps/org.example.App`,
    /// `user.slice/…/app-flatpak-org.example.App-12.scope`).
    public struct AppCgroup: Sendable, Hashable, Comparable {
        public var app: AppIdentifier
        public var path: String

        public init(app: AppIdentifier, path: String) {
            self.app = app
            self.path = path
        }

        /// The cgroup's depth below the root: what `socket cgroupv2 level` compares at.
        public var depth: Int { path.split(separator: "/").count }

        public static func < (lhs: AppCgroup, rhs: AppCgroup) -> Bool { (lhs.path, lhs.app.rawValue) < (rhs.path, rhs.app.rawValue) }
    }

    /// The apps of one rule with ``AppRule/matchDomains`` (include mode): their flows are marked
    /// only toward the addresses DNS answered for names in those domains, so the rest of their
    /// traffic goes as it would without the tunnel. Their DNS queries go to a resolver of
    /// netextd's on loopback that sends names in the domains to the tunnel's resolvers (and
    /// learns the answers) and other names to the machine's.
    public struct DomainLimitedApps: Sendable, Hashable {
        /// The rule's position among the tunnel's domain-limited rules: names its sets.
        public var index: Int
        public var cgroups: [AppCgroup]
        /// The addresses answered for the rule's domains, with their time left.
        public var destinations: [LearnedDestinations.Destination]
        /// netextd's resolver for these apps on loopback; nil: their queries are left as sent
        /// (the tunnel is not connected).
        public var resolver: LoopbackResolver?

        public init(index: Int, cgroups: [AppCgroup] = [], destinations: [LearnedDestinations.Destination] = [], resolver: LoopbackResolver? = nil) {
            self.index = index
            self.cgroups = cgroups
            self.destinations = destinations
            self.resolver = resolver
        }
    }

    /// A connected tunnel whose flows are steered by app.
    public struct Member: Sendable, Hashable {
        public var configuration: UUID
        public var mode: Mode
        /// ``FlowSteering/mark(slot:)`` of the tunnel's slot; names its set too.
        public var mark: UInt32
        /// The tunnel interface (include mode masquerades what leaves through it); empty while
        /// the tunnel is not connected (the apps' flows are marked all the same).
        public var interface: String
        /// The apps' cgroups alive now.
        public var cgroups: [AppCgroup]
        /// The cgroups (paths) whose sockets an eBPF program gives the mark at creation. Their
        /// sockets need no rule of the table: they choose the tunnel's route (or the way around
        /// it) and its source address themselves, and a socket older than the program keeps the
        /// way it had (as an app's flows opened before it was bound do on Apple's platforms).
        /// The other cgroups' packets are marked by the route chain, and translated.
        public var socketMarked: Set<String>
        /// Per-app on demand is on (include mode): a flow held while the tunnel was down chose
        /// the underlay's source address before the tunnel came up, so translation stays on.
        public var isOnDemand: Bool
        /// Where the apps' DNS queries (port 53) go instead of where they were sent: the
        /// tunnel's resolvers in include mode, the resolvers outside it in exclude mode. Empty:
        /// left as sent.
        public var dnsServers: [String]
        /// The tunnel's own addresses while it is connected: in exclude mode a socket that chose
        /// one of them as its source (the route it saw first was the tunnel's) is masqueraded
        /// to the underlay's address when its mark sends it around the tunnel.
        public var tunnelAddresses: [IPPrefix]
        /// Per-app on demand, while the tunnel is down: the apps' packets (but to loopback) are
        /// copied to this netfilter log group — their first flow starts the VPN — and dropped,
        /// so nothing of theirs leaves outside the tunnel; the app's retransmission (TCP: after
        /// a second) finds the tunnel up.
        public var onDemandLogGroup: UInt16?
        /// The apps whose rules limit them to domains (include mode).
        public var domainLimited: [DomainLimitedApps]
        /// Proxy mode, while the provider runs: its listeners. nil: the apps' flows are not
        /// marked and go as they would without the proxy.
        public var proxyPorts: ProxyPorts?
        /// Whether the apps' flows go to a running app proxy.
        public var isProxying: Bool { mode == .proxy && proxyPorts != nil }
        /// Proxy mode for a DNS proxy bound to the apps: only their DNS (TCP and UDP to port 53
        /// of other machines) goes to the proxy; the rest of their flows go their way.
        public var takesOnlyDNS = false
        /// Proxy mode, while the provider runs: the resolver the apps' DNS queries (TCP and UDP
        /// to port 53) are sent to instead of where they were sent — per-app relays' resolver,
        /// which asks the relays' DNS-over-HTTPS server through them. nil: left as sent.
        public var proxyResolver: LoopbackResolver?

        public init(
            configuration: UUID, mode: Mode, mark: UInt32, interface: String, cgroups: [AppCgroup] = [], dnsServers: [String] = [],
            tunnelAddresses: [IPPrefix] = [], onDemandLogGroup: UInt16? = nil, domainLimited: [DomainLimitedApps] = [], socketMarked: Set<String> = [],
            isOnDemand: Bool = false, proxyPorts: ProxyPorts? = nil, takesOnlyDNS: Bool = false, proxyResolver: LoopbackResolver? = nil
        ) {
            self.proxyResolver = proxyResolver
            self.takesOnlyDNS = takesOnlyDNS
            self.proxyPorts = proxyPorts
            self.isOnDemand = isOnDemand
            self.domainLimited = domainLimited
            self.socketMarked = socketMarked
            self.configuration = configuration
            self.mode = mode
            self.mark = mark
            self.interface = interface
            self.cgroups = cgroups
            self.dnsServers = dnsServers
            self.tunnelAddresses = tunnelAddresses
            self.onDemandLogGroup = onDemandLogGroup
        }

        var setName: String { "apps_" + String(mark >> 16, radix: 16) }

        /// The resolver the apps' DNS goes to now: a proxy's, while its provider runs.
        var activeProxyResolver: LoopbackResolver? { isProxying && !takesOnlyDNS ? proxyResolver : nil }

        /// The cgroups whose packets the route chain marks (no eBPF mark on their sockets).
        var tableMarked: [AppCgroup] { cgroups.filter { !socketMarked.contains($0.path) } }

        /// Whether some of the apps' packets are marked after their socket chose its source
        /// address, and so need translating: those of cgroups without the eBPF mark, a
        /// domain-limited app's (marked by destination), and on demand's held first flows.
        var needsTranslation: Bool {
            !tableMarked.isEmpty || (mode == .include && (isOnDemand || domainLimited.contains { !$0.cgroups.isEmpty }))
        }

        /// The sets of one domain-limited rule: its cgroups, and its IPv4 and IPv6 destinations.
        func domainSetNames(_ apps: DomainLimitedApps) -> (cgroups: String, ipv4: String, ipv6: String) {
            let suffix = String(mark >> 16, radix: 16) + "_" + String(apps.index)
            return ("dapps_" + suffix, "dst4_" + suffix, "dst6_" + suffix)
        }
    }

    public var members: [Member]
    /// The running transparent proxies (by network rules, for every program).
    public var transparentProxies: [TransparentProxy]

    /// The marks of the running app and transparent proxies: one policy rule each to
    /// ``proxyTable``.
    public var proxyMarks: Set<UInt32> { Set(members.filter(\.isProxying).map(\.mark) + transparentProxies.map(\.mark)) }
    /// Where nft finds the hierarchy: nft resolves a cgroup path below `/sys/fs/cgroup`, so on a
    /// hybrid layout (cgroup2 at `/sys/fs/cgroup/unified`) this is `unified/`; on a unified one
    /// it is empty.
    public var nftPathPrefix: String

    public init(members: [Member] = [], transparentProxies: [TransparentProxy] = [], nftPathPrefix: String = "") {
        self.members = members
        self.transparentProxies = transparentProxies
        self.nftPathPrefix = nftPathPrefix
    }

    /// Whether there is a table to keep.
    public var isActive: Bool { !members.isEmpty || !transparentProxies.isEmpty }

    /// Whether a path can be written into an nft string as it is (systemd unit names, app
    /// identifiers and netextd's own directories can; a name with quotes, spaces, backslashes or
    /// other bytes is left out rather than escaped).
    public static func isWritable(path: String) -> Bool {
        !path.isEmpty && path.utf8.count <= 4096 && path.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "+"): true
            default: false
            }
        }
    }

    /// One source-address match per family `addresses` has: ` ip saddr { … }` (or `!= { … }`).
    static func bySource(_ addresses: [IPPrefix], matching: Bool) -> [String] {
        [false, true].compactMap { isIPv6 in
            let own = addresses.filter { $0.isIPv6 == isIPv6 }.map(\.addressText)
            return own.isEmpty ? nil : " \(isIPv6 ? "ip6" : "ip") saddr \(matching ? "" : "!= "){ \(own.joined(separator: ", ")) }"
        }
    }

    /// A `type cgroupsv2` set of `cgroups`' writable paths.
    private func cgroupSet(_ name: String, _ cgroups: [AppCgroup]) -> [String] {
        var lines = ["  set \(name) {", "    type cgroupsv2"]
        let paths = Set(cgroups.map(\.path).filter(Self.isWritable)).sorted()
        if !paths.isEmpty {
            lines.append("    elements = { " + paths.map { "\"\(nftPathPrefix)\($0)\"" }.joined(separator: ", ") + " }")
        }
        return lines + ["  }"]
    }

    /// An address set whose elements expire (`flags timeout`).
    static func destinationSet(_ name: String, type: String, _ destinations: [LearnedDestinations.Destination]) -> [String] {
        var lines = ["  set \(name) {", "    type \(type)", "    flags timeout"]
        if !destinations.isEmpty {
            lines.append("    elements = { " + destinations.map { "\(IPPrefix.format($0.address)) timeout \($0.secondsLeft)s" }.joined(separator: ", ") + " }")
        }
        return lines + ["  }"]
    }

    /// The nat rules sending the DNS queries (TCP and UDP to port 53) of the sockets of the
    /// cgroups in `set` to `resolver` on loopback; a query over IPv6 is left as sent where the
    /// resolver has no IPv6 address.
    private static func dnsRedirect(set: String, depths: [Int], to resolver: LoopbackResolver) -> [String] {
        depths.flatMap { depth -> [String] in
            let match = "socket cgroupv2 level \(depth) @\(set)"
            var rules = ["    \(match) meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53 dnat ip to 127.0.0.1:\(resolver.port)"]
            if resolver.hasIPv6 { rules.append("    \(match) meta nfproto ipv6 meta l4proto { tcp, udp } th dport 53 dnat ip6 to [::1]:\(resolver.port)") }
            return rules
        }
    }

    /// The depths `cgroups` sit at (one `socket cgroupv2 level` rule each).
    private static func depths(_ cgroups: [AppCgroup]) -> [Int] {
        Set(cgroups.filter { isWritable(path: $0.path) }.map(\.depth)).sorted()
    }

    /// The complete `nft -f` input that (re)defines the table in one transaction.
    public var ruleset: String {
        var lines = ["add table inet \(Self.tableName)", "delete table inet \(Self.tableName)", "table inet \(Self.tableName) {"]
        let ordered = members.sorted { $0.mark < $1.mark }
        for member in ordered {
            lines += cgroupSet(member.setName, member.tableMarked)
            for apps in member.domainLimited {
                let names = member.domainSetNames(apps)
                lines += cgroupSet(names.cgroups, apps.cgroups)
                lines += Self.destinationSet(names.ipv4, type: "ipv4_addr", apps.destinations.filter { $0.address.count == 4 })
                lines += Self.destinationSet(names.ipv6, type: "ipv6_addr", apps.destinations.filter { $0.address.count == 16 })
            }
        }
        lines += transparentHostSetLines()
        let keep = Self.hex(~Self.markMask)
        lines += ["  chain route {", "    type route hook output priority mangle; policy accept;"]
        for member in ordered {
            let setMark = "counter meta mark set meta mark & \(keep) | \(Self.hex(member.mark))"
            if member.mode == .proxy {
                // TCP and UDP to other machines: loopback and the machine's own addresses stay
                // local, ICMP keeps its way, and so does DNS (port 53), which the machine's
                // resolver answers and whose answers name the proxied flows.
                guard member.isProxying, let ports = member.proxyPorts else { continue }
                let transports =
                    member.takesOnlyDNS ? "meta l4proto { tcp, udp } th dport 53"
                    : ports.udp4 != nil ? "meta l4proto { tcp, udp } th dport != 53" : "meta l4proto tcp"
                for depth in Self.depths(member.tableMarked) {
                    lines.append("    socket cgroupv2 level \(depth) @\(member.setName) \(transports) fib daddr type != local \(setMark)")
                }
                continue
            }
            for depth in Self.depths(member.tableMarked) {
                lines.append("    socket cgroupv2 level \(depth) @\(member.setName) \(setMark)")
            }
            for apps in member.domainLimited {
                let names = member.domainSetNames(apps)
                for depth in Self.depths(apps.cgroups) {
                    lines.append("    socket cgroupv2 level \(depth) @\(names.cgroups) ip daddr @\(names.ipv4) \(setMark)")
                    lines.append("    socket cgroupv2 level \(depth) @\(names.cgroups) ip6 daddr @\(names.ipv6) \(setMark)")
                }
            }
        }
        lines += transparentRouteLines(keep: keep)
        lines.append("  }")
        let proxying = ordered.filter(\.isProxying)
        if !proxying.isEmpty || !transparentProxies.isEmpty {
            // The marked packets come back in through lo (the proxy table's local route), and
            // `tproxy` gives them to the listener without changing their addresses.
            lines += ["  chain proxy {", "    type filter hook prerouting priority mangle; policy accept;"]
            lines += transparentInboundLines()
            let listeners = proxying.compactMap { member in member.proxyPorts.map { (member.mark, $0) } } + transparentProxies.map { ($0.mark, $0.ports) }
            for (mark, ports) in listeners {
                let marked = "iifname \"lo\" \(Self.markMatch(mark)) meta l4proto tcp"
                lines.append("    \(marked) meta nfproto ipv4 counter tproxy ip to 127.0.0.1:\(ports.tcp4) accept")
                if let tcp6 = ports.tcp6 {
                    lines.append("    \(marked) meta nfproto ipv6 counter tproxy ip6 to [::1]:\(tcp6) accept")
                } else {
                    lines.append("    \(marked) meta nfproto ipv6 counter reject with tcp reset")
                }
                let datagrams = "iifname \"lo\" \(Self.markMatch(mark)) meta l4proto udp"
                if let udp4 = ports.udp4 { lines.append("    \(datagrams) meta nfproto ipv4 counter tproxy ip to 127.0.0.1:\(udp4) accept") }
                if let udp6 = ports.udp6 { lines.append("    \(datagrams) meta nfproto ipv6 counter tproxy ip6 to [::1]:\(udp6) accept") }
            }
            lines.append("  }")
            // The names behind the addresses: every DNS answer that arrives is copied to netextd.
            lines += ["  chain proxydns {", "    type filter hook input priority -10; policy accept;"]
            lines.append("    udp sport 53 log group \(Self.proxyDNSLogGroup) snaplen 1500")
            // And the answers of a proxy's own resolver (from its loopback port to the app).
            for resolver in proxying.compactMap(\.activeProxyResolver) {
                lines.append("    ip saddr 127.0.0.1 udp sport \(resolver.port) log group \(Self.proxyDNSLogGroup) snaplen 1500")
                if resolver.hasIPv6 { lines.append("    ip6 saddr ::1 udp sport \(resolver.port) log group \(Self.proxyDNSLogGroup) snaplen 1500") }
            }
            lines.append("  }")
        }
        let waiting = ordered.filter { $0.onDemandLogGroup != nil && $0.interface.isEmpty }
        if !waiting.isEmpty {
            // Before the kill switch's chain (priority filter): a held packet is logged first.
            lines += ["  chain ondemand {", "    type filter hook output priority -10; policy accept;"]
            for member in waiting {
                let marked = "oifname != \"lo\" \(Self.markMatch(member.mark))"
                lines.append("    \(marked) limit rate 20/second log group \(member.onDemandLogGroup ?? 0)")
                lines.append("    \(marked) counter drop")
            }
            lines.append("  }")
        }
        let redirects = ordered.filter { !$0.dnsServers.isEmpty || $0.domainLimited.contains { $0.resolver != nil } || $0.activeProxyResolver != nil }
        if !redirects.isEmpty {
            lines += ["  chain dns {", "    type nat hook output priority -100; policy accept;"]
            for member in redirects {
                // A proxy's apps' queries go to its resolver, matched by cgroup (the route chain
                // leaves DNS unmarked).
                if let resolver = member.activeProxyResolver {
                    lines += Self.dnsRedirect(set: member.setName, depths: Self.depths(member.tableMarked), to: resolver)
                }
                // A domain-limited app's queries go to netextd's resolver for its rule (its own
                // packets are never marked toward a resolver it was not answered for).
                for apps in member.domainLimited {
                    guard let resolver = apps.resolver else { continue }
                    lines += Self.dnsRedirect(set: member.domainSetNames(apps).cgroups, depths: Self.depths(apps.cgroups), to: resolver)
                }
                guard !member.dnsServers.isEmpty else { continue }
                let marked = Self.markMatch(member.mark)
                // The first resolver of each family; a query of a family the tunnel has no
                // resolver for is left as sent.
                if let v4 = member.dnsServers.first(where: { !$0.contains(":") }) {
                    lines.append("    \(marked) meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53 dnat ip to \(v4)")
                }
                if let v6 = member.dnsServers.first(where: { $0.contains(":") }) {
                    lines.append("    \(marked) meta nfproto ipv6 meta l4proto { tcp, udp } th dport 53 dnat ip6 to \(v6)")
                }
            }
            lines.append("  }")
        }
        // Only where something needs translating: a nat chain switches connection tracking on
        // for every packet of the namespace.
        let connected = ordered.filter { !$0.interface.isEmpty && $0.needsTranslation }
        if !connected.isEmpty {
            // A socket picks its source address by the route it sees before the mark reroutes
            // it: an included app's has the underlay's address and gets the tunnel's; an
            // excluded app's may have the tunnel's and gets the underlay's.
            lines += ["  chain postrouting {", "    type nat hook postrouting priority srcnat; policy accept;"]
            for member in connected {
                let marked = Self.markMatch(member.mark)
                switch member.mode {
                case .include:
                    // Sockets the eBPF program marked at creation already have the tunnel's
                    // address: they are left alone.
                    let rules = Self.bySource(member.tunnelAddresses, matching: false)
                    lines += (rules.isEmpty ? [""] : rules).map { "    oifname \"\(member.interface)\" \(marked)\($0) masquerade" }
                case .exclude:
                    lines += Self.bySource(member.tunnelAddresses, matching: true).map { "    oifname != \"\(member.interface)\" \(marked)\($0) masquerade" }
                case .proxy:
                    break
                }
            }
            lines.append("  }")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }
}
