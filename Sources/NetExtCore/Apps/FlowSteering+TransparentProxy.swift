import Foundation

/// Transparent proxies in the steering table: flows of every program are chosen by the
/// provider's network rules instead of by app, marked in the same route chain, and handed to
/// netextd's listeners by the same `tproxy` rules as an app proxy's.
extension FlowSteering {
    /// The mark of the transparent proxy at `index` (0…63): below every tunnel's
    /// (``mark(slot:)``), inside the steering's bits.
    public static func transparentMark(index: Int) -> UInt32 {
        precondition((0...maximumTransparentProxies - 1).contains(index), "transparent proxy \(index) has no mark")
        return UInt32(0x40 | index) << 16
    }

    public static let maximumTransparentProxies = 64

    /// The mark netextd gives its own connections that must never be steered (the direct
    /// connection of a flow a transparent proxy declined).
    public static let bypassMark: UInt32 = 0x01 << 16

    /// A running transparent proxy.
    public struct TransparentProxy: Sendable, Hashable {
        public var configuration: UUID
        public var mark: UInt32
        public var ports: ProxyPorts
        public var settings: TransparentProxyNetworkSettings
        /// The users whose sockets are never taken (the provider's own, so its upstream
        /// connections are not captured again).
        public var exemptUIDs: [UInt32]
        /// The addresses DNS answered for the names of each host rule (by the rule's index in
        /// its list), with their time left: the rule's sets.
        public var includedHostDestinations: [Int: [LearnedDestinations.Destination]]
        public var excludedHostDestinations: [Int: [LearnedDestinations.Destination]]

        public init(
            configuration: UUID, mark: UInt32, ports: ProxyPorts, settings: TransparentProxyNetworkSettings, exemptUIDs: [UInt32],
            includedHostDestinations: [Int: [LearnedDestinations.Destination]] = [:], excludedHostDestinations: [Int: [LearnedDestinations.Destination]] = [:]
        ) {
            self.includedHostDestinations = includedHostDestinations
            self.excludedHostDestinations = excludedHostDestinations
            self.configuration = configuration
            self.mark = mark
            self.ports = ports
            self.settings = settings
            self.exemptUIDs = exemptUIDs
        }
    }

    /// The address sets of a proxy's host rule (IPv4, IPv6): `tph4_41_i0`, `tph6_41_i0`.
    static func hostSetNames(mark: UInt32, included: Bool, index: Int) -> (ipv4: String, ipv6: String) {
        let suffix = String(mark >> 16, radix: 16) + (included ? "_i" : "_e") + String(index)
        return ("tph4_" + suffix, "tph6_" + suffix)
    }

    /// The sets of every transparent proxy's host rules, with the addresses learned so far.
    func transparentHostSetLines() -> [String] {
        var lines: [String] = []
        for proxy in transparentProxies.sorted(by: { $0.mark < $1.mark }) {
            for (included, rules, learned) in [(false, proxy.settings.excludedNetworkRules, proxy.excludedHostDestinations), (true, proxy.settings.includedNetworkRules, proxy.includedHostDestinations)] {
                for (index, rule) in rules.enumerated() where rule.isHostRule {
                    let names = Self.hostSetNames(mark: proxy.mark, included: included, index: index)
                    let destinations = learned[index] ?? []
                    lines += Self.destinationSet(names.ipv4, type: "ipv4_addr", destinations.filter { $0.address.count == 4 })
                    lines += Self.destinationSet(names.ipv6, type: "ipv6_addr", destinations.filter { $0.address.count == 16 })
                }
            }
        }
        return lines
    }

    /// The route chain's lines for the transparent proxies: exemptions first (netextd's own
    /// bypass connections, the providers' users, the machine's own addresses, already-steered
    /// packets), then each proxy's excluded rules, then its included ones.
    func transparentRouteLines(keep: String) -> [String] {
        guard !transparentProxies.isEmpty else { return [] }
        var lines: [String] = []
        let flows = "meta l4proto { tcp, udp }"
        lines.append("    \(flows) \(Self.markMatch(Self.bypassMark)) return")
        let exempt = Set(transparentProxies.flatMap(\.exemptUIDs)).sorted()
        if !exempt.isEmpty {
            lines.append("    \(flows) meta skuid { \(exempt.map(String.init).joined(separator: ", ")) } return")
        }
        lines.append("    \(flows) fib daddr type local return")
        // A flow an app proxy or tunnel already steers keeps its way.
        lines.append("    \(flows) meta mark & \(Self.hex(Self.markMask)) != 0 return")
        for proxy in transparentProxies.sorted(by: { $0.mark < $1.mark }) {
            let setMark = "counter meta mark set meta mark & \(keep) | \(Self.hex(proxy.mark))"
            for (index, rule) in proxy.settings.excludedNetworkRules.enumerated() where rule.takesOutbound {
                let sets = Self.hostSetNames(mark: proxy.mark, included: false, index: index)
                for match in rule.nftMatches(hostSets: sets) { lines.append("    \(match) return") }
            }
            for (index, rule) in proxy.settings.includedNetworkRules.enumerated() where rule.takesOutbound {
                let sets = Self.hostSetNames(mark: proxy.mark, included: true, index: index)
                for match in rule.nftMatches(hostSets: sets) { lines.append("    \(match) \(setMark)") }
            }
        }
        return lines
    }

    /// The prerouting proxy chain's lines for the transparent proxies' inbound rules: a new TCP
    /// connection from another machine to one of this machine's addresses that an included rule
    /// names (and no excluded one) is handed by `tproxy` to the proxy's inbound listener, so the
    /// kernel completes the handshake there; the later packets of the connection find its socket
    /// the same way. Nothing arriving on `lo` is taken.
    func transparentInboundLines() -> [String] {
        var lines: [String] = []
        for proxy in transparentProxies.sorted(by: { $0.mark < $1.mark }) {
            let included = proxy.settings.includedNetworkRules.filter(\.takesInbound)
            guard !included.isEmpty, let inbound4 = proxy.ports.inbound4 else { continue }
            let arriving = "iifname != \"lo\" fib daddr type local"
            for rule in proxy.settings.excludedNetworkRules where rule.takesInbound {
                for match in rule.nftMatches(.inbound) { lines.append("    \(arriving) \(match) return") }
            }
            for rule in included {
                for match in rule.nftMatches(.inbound) {
                    if match.hasPrefix("ip6 ") || match.contains("nfproto ipv6") {
                        guard let inbound6 = proxy.ports.inbound6 else { continue }
                        lines.append("    \(arriving) \(match) counter tproxy ip6 to [::1]:\(inbound6) accept")
                    } else {
                        lines.append("    \(arriving) \(match) counter tproxy ip to 127.0.0.1:\(inbound4) accept")
                    }
                }
            }
        }
        return lines
    }
}
