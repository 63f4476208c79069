import Foundation
import Testing
@testable import NetExtCore

@Suite("Per-app routing: plans, the steering table, app cgroups, the kill switch's exceptions")
struct FlowSteeringTests {
    static let settings = PacketTunnelNetworkSettings(
        tunnelRemoteAddress: "192.0.2.1",
        ipv4Settings: IPv4Settings(addresses: ["10.99.0.2"], subnetMasks: ["255.255.255.255"],
            includedRoutes: [IPv4Route(destinationAddress: "10.20.0.0", subnetMask: "255.255.0.0")],
            excludedRoutes: [IPv4Route(destinationAddress: "10.20.9.0", subnetMask: "255.255.255.0")]),
        ipv6Settings: IPv6Settings(addresses: ["fd99::2"], networkPrefixLengths: [128], includedRoutes: [IPv6Route(destinationAddress: "fd20::", networkPrefixLength: 64)]),
        mtu: 1420)
    static let mark = FlowSteering.mark(slot: 0)

    static func plan(_ routing: NetworkPlan.AppRouting?) throws -> NetworkPlan {
        try NetworkPlan.make(settings: settings, interface: "netext0", table: 7100, rulePriority: 7100, underlyingMTU: 1500, policy: .init(appRouting: routing))
    }

    @Test("marks: one per slot inside the steering's bits, clear of the content filter's; written as ip rule and nft write them")
    func marks() {
        #expect(FlowSteering.mark(slot: 0) == 0x0080_0000)
        #expect(FlowSteering.mark(slot: FlowSteering.maximumSlots) == 0x00FF_0000)
        let all = (0...FlowSteering.maximumSlots).map(FlowSteering.mark(slot:))
        #expect(Set(all).count == all.count)
        #expect(all.allSatisfy { $0 & ~FlowSteering.markMask == 0 && $0 & FilterSteering.verdictMask == 0 && $0 & FilterSteering.replyMark == 0 })
        #expect(FlowSteering.hex(0x0080_0000) == "0x00800000")
        #expect(FlowSteering.hex(0xFF00_FFFF) == "0xff00ffff")
    }

    @Test("include mode: a default route per family, and only marked flows look the tunnel's table up")
    func includePlan() throws {
        let plan = try Self.plan(.include(mark: Self.mark))
        #expect(plan.includedRoutes == [try IPPrefix("0.0.0.0/0"), try IPPrefix("::/0")])
        #expect(plan.applyCommands.contains(["-4", "rule", "add", "priority", "7102", "fwmark", "0x00800000/0x00ff0000", "lookup", "7100"]))
        #expect(plan.applyCommands.contains(["-6", "rule", "add", "priority", "7102", "fwmark", "0x00800000/0x00ff0000", "lookup", "7100"]))
        #expect(!plan.applyCommands.contains { $0.suffix(2) == ["lookup", "7100"] && !$0.contains("fwmark") })
    }

    @Test("exclude mode: the provider's routes as usual, and marked flows look the main table up first")
    func excludePlan() throws {
        let plan = try Self.plan(.exclude(mark: Self.mark))
        #expect(plan.includedRoutes == [try IPPrefix("10.20.0.0/16"), try IPPrefix("fd20::/64")])
        #expect(plan.applyCommands.contains(["-4", "rule", "add", "priority", "7101", "fwmark", "0x00800000/0x00ff0000", "lookup", "main"]))
        #expect(plan.applyCommands.contains(["-4", "rule", "add", "priority", "7102", "lookup", "7100"]))
        // Changing modes changes only the rules.
        let include = try Self.plan(.include(mark: Self.mark))
        let change = include.changeCommands(from: plan)
        #expect(change.contains(["-4", "rule", "del", "priority", "7101", "fwmark", "0x00800000/0x00ff0000", "lookup", "main"]))
        #expect(!change.contains { $0.contains("address") })
    }

    @Test("property: where a packet goes, by destination and mark, in both modes, matches the model (2,000 random packets)")
    func routingProperty() throws {
        var generator = SystemRandomNumberGenerator()
        let include = try Self.plan(.include(mark: Self.mark))
        let exclude = try Self.plan(.exclude(mark: Self.mark))
        let plain = try Self.plan(nil)
        let office = try IPPrefix("10.20.0.0/16"), excluded = try IPPrefix("10.20.9.0/24"), office6 = try IPPrefix("fd20::/64")
        for _ in 0..<2_000 {
            let isIPv6 = Bool.random(using: &generator)
            var address: [UInt8]
            if isIPv6 {
                address = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if Bool.random(using: &generator) { address[0] = 0xfd; address[1] = 0x20; address[2...7] = [0, 0, 0, 0, 0, 0] }
            } else {
                address = (0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if Bool.random(using: &generator) { address[0] = 10; address[1] = 20 }
                if Int.random(in: 0..<8, using: &generator) == 0 { address[2] = 9 }
                if Int.random(in: 0..<50, using: &generator) == 0 { address = [192, 0, 2, 1] }
            }
            let marked = Bool.random(using: &generator)
            let mark: UInt32 = marked ? Self.mark | 0x2000_0000 : UInt32.random(in: 0...0xFFFF, using: &generator)
            let host = IPPrefix(address: address, length: address.count * 8)
            let isServer = address == [192, 0, 2, 1]
            let splitRoutes = (office.contains(host) && !excluded.contains(host)) || office6.contains(host)
            func inTunnel(_ route: PlannedRoute) -> Bool { if case .tunnel = route { true } else { false } }
            // Include: a bound app's packet goes in unless it is for the server or an excluded route.
            #expect(inTunnel(NetworkPlan.route(to: address, through: [include], mark: mark)) == (marked && !isServer && !excluded.contains(host)))
            // Exclude: a bound app's packet never goes in; others as the split tunnel routes them.
            #expect(inTunnel(NetworkPlan.route(to: address, through: [exclude], mark: mark)) == (!marked && splitRoutes && !isServer))
            #expect(inTunnel(NetworkPlan.route(to: address, through: [plain], mark: mark)) == (splitRoutes && !isServer))
        }
    }

    @Test("the steering table: a set per tunnel, one rule per depth its cgroups sit at, DNS redirected, masquerade by mode")
    func ruleset() throws {
        let app = try AppIdentifier("org.example.Office")
        let other = try AppIdentifier("org.example.Direct")
        let steering = FlowSteering(members: [
            .init(configuration: UUID(), mode: .include, mark: FlowSteering.mark(slot: 0), interface: "netext0",
                  cgroups: [.init(app: app, path: "netext-apps/org.example.Office"),
                            .init(app: app, path: "user.slice/user-1000.slice/user@1000.service/app.slice/app-flatpak-org.example.Office-12.scope"),
                            .init(app: app, path: "bad\"name/x")],
                  dnsServers: ["10.20.0.53", "fd20::53"]),
            .init(configuration: UUID(), mode: .exclude, mark: FlowSteering.mark(slot: 1), interface: "netext1",
                  cgroups: [.init(app: other, path: "netext-apps/org.example.Direct")], dnsServers: ["198.51.100.53"],
                  tunnelAddresses: [try IPPrefix("10.99.0.2/32"), try IPPrefix("fd99::2/128")]),
        ], nftPathPrefix: "unified/")
        let lines = steering.ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.prefix(3) == ["add table inet netextd_apps", "delete table inet netextd_apps", "table inet netextd_apps {"])
        #expect(lines.contains("elements = { \"unified/netext-apps/org.example.Office\", \"unified/user.slice/user-1000.slice/user@1000.service/app.slice/app-flatpak-org.example.Office-12.scope\" }"))
        #expect(!steering.ruleset.contains("bad"), "a path nft cannot be given as written is left out")
        #expect(lines.contains("socket cgroupv2 level 2 @apps_80 counter meta mark set meta mark & 0xff00ffff | 0x00800000"))
        #expect(lines.contains("socket cgroupv2 level 5 @apps_80 counter meta mark set meta mark & 0xff00ffff | 0x00800000"))
        #expect(lines.contains("socket cgroupv2 level 2 @apps_81 counter meta mark set meta mark & 0xff00ffff | 0x00810000"))
        #expect(lines.filter { $0.hasPrefix("socket cgroupv2") }.count == 3)
        #expect(lines.contains("meta mark & 0x00ff0000 == 0x00800000 meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53 dnat ip to 10.20.0.53"))
        #expect(lines.contains("meta mark & 0x00ff0000 == 0x00800000 meta nfproto ipv6 meta l4proto { tcp, udp } th dport 53 dnat ip6 to fd20::53"))
        #expect(lines.contains("meta mark & 0x00ff0000 == 0x00810000 meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53 dnat ip to 198.51.100.53"))
        #expect(lines.contains("oifname \"netext0\" meta mark & 0x00ff0000 == 0x00800000 masquerade"), "without its addresses known, every marked packet")
        var known = steering
        known.members[0].tunnelAddresses = [try IPPrefix("10.99.0.2/32")]
        #expect(known.ruleset.contains("oifname \"netext0\" meta mark & 0x00ff0000 == 0x00800000 ip saddr != { 10.99.0.2 } masquerade"))
        #expect(!known.ruleset.contains("oifname \"netext0\" meta mark & 0x00ff0000 == 0x00800000 masquerade"))
        #expect(lines.contains("oifname != \"netext1\" meta mark & 0x00ff0000 == 0x00810000 ip saddr { 10.99.0.2 } masquerade"))
        #expect(lines.contains("oifname != \"netext1\" meta mark & 0x00ff0000 == 0x00810000 ip6 saddr { fd99::2 } masquerade"))
        #expect(lines.filter { $0 == "{" || $0.hasSuffix("{") }.count == lines.filter { $0 == "}" }.count, "braces balance")
    }

    @Test("proxy mode: only TCP to other machines is marked, tproxy per family to the listeners, no nat; nothing is marked while the provider is not running")
    func proxyRuleset() throws {
        let app = try AppIdentifier("org.example.Browser")
        var member = FlowSteering.Member(
            configuration: UUID(), mode: .proxy, mark: FlowSteering.mark(slot: 2), interface: "",
            cgroups: [.init(app: app, path: "netext-apps/org.example.Browser")], proxyPorts: .init(tcp4: 40001, tcp6: 40002))
        let running = FlowSteering(members: [member])
        let lines = running.ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.contains("socket cgroupv2 level 2 @apps_82 meta l4proto tcp fib daddr type != local counter meta mark set meta mark & 0xff00ffff | 0x00820000"))
        #expect(lines.contains("type filter hook prerouting priority mangle; policy accept;"))
        #expect(lines.contains("iifname \"lo\" meta mark & 0x00ff0000 == 0x00820000 meta l4proto tcp meta nfproto ipv4 counter tproxy ip to 127.0.0.1:40001 accept"))
        #expect(lines.contains("iifname \"lo\" meta mark & 0x00ff0000 == 0x00820000 meta l4proto tcp meta nfproto ipv6 counter tproxy ip6 to [::1]:40002 accept"))
        #expect(!running.ruleset.contains("type nat"), "the kernel terminates the connection: nothing is translated")
        #expect(running.proxyMarks == [FlowSteering.mark(slot: 2)])
        // With UDP sockets: UDP is marked too (but DNS), and handed to them.
        member.proxyPorts = .init(tcp4: 40001, tcp6: 40002, udp4: 40003, udp6: 40004)
        let withUDP = FlowSteering(members: [member]).ruleset
        #expect(withUDP.contains("socket cgroupv2 level 2 @apps_82 meta l4proto { tcp, udp } th dport != 53 fib daddr type != local counter"))
        #expect(withUDP.contains("iifname \"lo\" meta mark & 0x00ff0000 == 0x00820000 meta l4proto udp meta nfproto ipv4 counter tproxy ip to 127.0.0.1:40003 accept"))
        #expect(withUDP.contains("meta l4proto udp meta nfproto ipv6 counter tproxy ip6 to [::1]:40004 accept"))
        // A DNS proxy bound to the app: only its DNS (TCP and UDP to port 53) is marked.
        var dnsOnly = member
        dnsOnly.takesOnlyDNS = true
        let dnsRules = FlowSteering(members: [dnsOnly]).ruleset
        #expect(dnsRules.contains("socket cgroupv2 level 2 @apps_82 meta l4proto { tcp, udp } th dport 53 fib daddr type != local counter meta mark set"))
        #expect(!dnsRules.contains("dport != 53"))
        #expect(dnsRules.contains("meta l4proto udp meta nfproto ipv4 counter tproxy ip to 127.0.0.1:40003 accept"))
        // Per-app relays' resolver: the apps' DNS (TCP and UDP to port 53) goes to it by cgroup,
        // and its answers are copied to the names' log group like any from port 53.
        var resolved = member
        resolved.proxyResolver = .init(port: 40053, hasIPv6: true)
        let resolverRules = FlowSteering(members: [resolved]).ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(resolverRules.contains("type nat hook output priority -100; policy accept;"))
        #expect(resolverRules.contains("socket cgroupv2 level 2 @apps_82 meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53 dnat ip to 127.0.0.1:40053"))
        #expect(resolverRules.contains("socket cgroupv2 level 2 @apps_82 meta nfproto ipv6 meta l4proto { tcp, udp } th dport 53 dnat ip6 to [::1]:40053"))
        #expect(resolverRules.contains("ip saddr 127.0.0.1 udp sport 40053 log group 7099 snaplen 1500"))
        #expect(resolverRules.contains("ip6 saddr ::1 udp sport 40053 log group 7099 snaplen 1500"))
        // The route chain still leaves DNS unmarked (the nat rule takes it before any listener).
        #expect(resolverRules.contains { $0.hasPrefix("socket cgroupv2 level 2 @apps_82 meta l4proto { tcp, udp } th dport != 53") })
        resolved.proxyResolver = .init(port: 40053, hasIPv6: false)
        let ipv4Only = FlowSteering(members: [resolved]).ruleset
        #expect(ipv4Only.contains("dnat ip to 127.0.0.1:40053") && !ipv4Only.contains("dnat ip6") && !ipv4Only.contains("ip6 saddr ::1 udp sport"))
        // The provider not running: nothing is redirected (the apps' DNS goes as sent).
        resolved.proxyPorts = nil
        #expect(!FlowSteering(members: [resolved]).ruleset.contains("dnat"))
        // Without an IPv6 listener an IPv6 flow is refused at once rather than left to time out.
        member.proxyPorts = .init(tcp4: 40001, tcp6: nil)
        #expect(FlowSteering(members: [member]).ruleset.contains("meta nfproto ipv6 counter reject with tcp reset"))
        // The provider not running: the set stays, nothing is marked or redirected.
        member.proxyPorts = nil
        let idle = FlowSteering(members: [member])
        #expect(idle.ruleset.contains("set apps_82 {"))
        #expect(!idle.ruleset.contains("socket cgroupv2"))
        #expect(!idle.ruleset.contains("tproxy"))
        #expect(idle.proxyMarks.isEmpty)
    }

    @Test("transparent proxy: exemptions first (netextd's bypass, the provider's user, local destinations, flows already steered), excluded rules, then included TCP and UDP rules; tproxy to its listeners")
    func transparentRuleset() throws {
        let settings = TransparentProxyNetworkSettings(
            includedNetworkRules: [
                NetworkRule(destinationNetwork: try IPPrefix("0.0.0.0/0"), destinationPort: 443, protocol: .tcp),
                NetworkRule(destinationNetwork: try IPPrefix("2001:db8::/32")),
                NetworkRule(destinationNetwork: try IPPrefix("192.0.2.0/24"), destinationPort: 53, protocol: .udp),
            ],
            excludedNetworkRules: [NetworkRule(destinationNetwork: try IPPrefix("10.0.0.0/8"))])
        let mark = FlowSteering.transparentMark(index: 0)
        let steering = FlowSteering(transparentProxies: [
            .init(configuration: UUID(), mark: mark, ports: .init(tcp4: 41000, tcp6: 41001, udp4: 41002, udp6: 41003), settings: settings, exemptUIDs: [65534]),
        ])
        #expect(steering.isActive)
        #expect(steering.proxyMarks == [mark])
        let lines = steering.ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let route = Array(lines.drop { !$0.hasPrefix("chain route") })
        let expected = [
            "meta l4proto { tcp, udp } meta mark & 0x00ff0000 == 0x00010000 return",
            "meta l4proto { tcp, udp } meta skuid { 65534 } return",
            "meta l4proto { tcp, udp } fib daddr type local return",
            "meta l4proto { tcp, udp } meta mark & 0x00ff0000 != 0 return",
            "ip daddr 10.0.0.0/8 meta l4proto { tcp, udp } return",
            "meta nfproto ipv4 meta l4proto tcp th dport 443 counter meta mark set meta mark & 0xff00ffff | 0x00400000",
            "ip6 daddr 2001:db8::/32 meta l4proto { tcp, udp } counter meta mark set meta mark & 0xff00ffff | 0x00400000",
            "ip daddr 192.0.2.0/24 meta l4proto udp th dport 53 counter meta mark set meta mark & 0xff00ffff | 0x00400000",
        ]
        #expect(Array(route.dropFirst(2).prefix(expected.count)) == expected)
        #expect(lines.contains("iifname \"lo\" meta mark & 0x00ff0000 == 0x00400000 meta l4proto tcp meta nfproto ipv4 counter tproxy ip to 127.0.0.1:41000 accept"))
        #expect(lines.contains("iifname \"lo\" meta mark & 0x00ff0000 == 0x00400000 meta l4proto udp meta nfproto ipv4 counter tproxy ip to 127.0.0.1:41002 accept"))
        #expect(lines.contains("iifname \"lo\" meta mark & 0x00ff0000 == 0x00400000 meta l4proto udp meta nfproto ipv6 counter tproxy ip6 to [::1]:41003 accept"))
        #expect(lines.contains("udp sport 53 log group 7099 snaplen 1500"))
        #expect(FlowSteering.transparentMark(index: 63) & ~FlowSteering.markMask == 0 && FlowSteering.transparentMark(index: 63) < FlowSteering.mark(slot: 0))
    }

    @Test("host rules: one label names that host, more a domain and the names below it; case and a final dot do not matter; port 0 is any port")
    func hostRuleCoverage() throws {
        let domain = NetworkRule(destinationHost: NetworkEndpoint(hostname: "Site.Test.", port: 0), protocol: .tcp)
        #expect(domain.destinationHost == "site.test" && domain.destinationPort == nil && domain.isHostRule)
        #expect(domain.covers(host: "site.test") && domain.covers(host: "WWW.site.test.") && domain.covers(host: "a.b.site.test"))
        #expect(!domain.covers(host: "othersite.test") && !domain.covers(host: "test") && !domain.covers(host: "site.test.example"))
        let single = NetworkRule(destinationHost: NetworkEndpoint(hostname: "intranet", port: 443))
        #expect(single.covers(host: "intranet") && !single.covers(host: "www.intranet"))
        #expect(!NetworkRule(destinationNetwork: try IPPrefix("0.0.0.0/0")).covers(host: "site.test"))
        #expect(single.description == "host intranet port 443 any")
    }

    @Test("host rules in the ruleset: a timeout set per family per rule with what was learned; excluded before included; their ports and protocols")
    func hostRuleRuleset() throws {
        let settings = TransparentProxyNetworkSettings(
            includedNetworkRules: [
                NetworkRule(destinationNetwork: try IPPrefix("192.0.2.0/24"), destinationPort: 443, protocol: .tcp),
                NetworkRule(destinationHost: NetworkEndpoint(hostname: "site.test", port: 8080), protocol: .tcp),
            ],
            excludedNetworkRules: [NetworkRule(destinationHost: NetworkEndpoint(hostname: "public.site.test", port: 0))])
        let mark = FlowSteering.transparentMark(index: 1)
        let steering = FlowSteering(transparentProxies: [
            .init(
                configuration: UUID(), mark: mark, ports: .init(tcp4: 41000, tcp6: 41001), settings: settings, exemptUIDs: [65534],
                includedHostDestinations: [1: [.init(address: [100, 64, 0, 80], secondsLeft: 300), .init(address: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0x80], secondsLeft: 120)]]),
        ])
        #expect(settings.hasHostRules)
        #expect(!TransparentProxyNetworkSettings.dnsProxy.hasHostRules)
        let lines = steering.ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.contains("set tph4_41_i1 {") && lines.contains("set tph6_41_i1 {") && lines.contains("set tph4_41_e0 {"))
        #expect(lines.contains("elements = { 100.64.0.80 timeout 300s }"))
        #expect(lines.contains("elements = { 2001:db8::80 timeout 120s }"))
        #expect(!lines.contains("set tph4_41_i0 {"), "a network rule has no set")
        let route = Array(lines.drop { !$0.hasPrefix("chain route") })
        let setMark = "counter meta mark set meta mark & 0xff00ffff | 0x00410000"
        let expected = [
            "ip daddr @tph4_41_e0 meta l4proto { tcp, udp } return",
            "ip6 daddr @tph6_41_e0 meta l4proto { tcp, udp } return",
            "ip daddr 192.0.2.0/24 meta l4proto tcp th dport 443 \(setMark)",
            "ip daddr @tph4_41_i1 meta l4proto tcp th dport 8080 \(setMark)",
            "ip6 daddr @tph6_41_i1 meta l4proto tcp th dport 8080 \(setMark)",
        ]
        #expect(Array(route.dropFirst(6).prefix(expected.count)) == expected)
    }

    @Test("inbound rules: other machines' new TCP connections to this machine, by remote network and local port, tproxied in prerouting to the inbound listeners; excluded ones first; never in the route chain; direction any in both")
    func inboundRuleset() throws {
        let settings = TransparentProxyNetworkSettings(
            includedNetworkRules: [
                NetworkRule(remoteNetwork: try IPPrefix("203.0.113.0/24"), localPort: 9090, protocol: .tcp, direction: .inbound),
                NetworkRule(remoteNetwork: nil, localPort: 22, protocol: .tcp, direction: .inbound),
                NetworkRule(remoteNetwork: try IPPrefix("192.0.2.0/24"), remotePort: 443, protocol: .tcp, direction: .any),
            ],
            excludedNetworkRules: [NetworkRule(remoteNetwork: try IPPrefix("203.0.113.9/32"), protocol: .tcp, direction: .inbound)])
        try settings.validate()
        let mark = FlowSteering.transparentMark(index: 0)
        let steering = FlowSteering(transparentProxies: [
            .init(configuration: UUID(), mark: mark, ports: .init(tcp4: 41000, tcp6: 41001, inbound4: 41004, inbound6: 41005), settings: settings, exemptUIDs: [65534]),
        ])
        let lines = steering.ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let proxy = Array(lines.drop { !$0.hasPrefix("chain proxy") }.dropFirst(2).prefix(6))
        let arriving = "iifname != \"lo\" fib daddr type local"
        #expect(proxy == [
            "\(arriving) ip saddr 203.0.113.9/32 meta l4proto tcp return",
            "\(arriving) ip saddr 203.0.113.0/24 meta l4proto tcp th dport 9090 counter tproxy ip to 127.0.0.1:41004 accept",
            "\(arriving) meta nfproto ipv4 meta l4proto tcp th dport 22 counter tproxy ip to 127.0.0.1:41004 accept",
            "\(arriving) meta nfproto ipv6 meta l4proto tcp th dport 22 counter tproxy ip6 to [::1]:41005 accept",
            "\(arriving) ip saddr 192.0.2.0/24 meta l4proto tcp th sport 443 counter tproxy ip to 127.0.0.1:41004 accept",
            "iifname \"lo\" meta mark & 0x00ff0000 == 0x00400000 meta l4proto tcp meta nfproto ipv4 counter tproxy ip to 127.0.0.1:41000 accept",
        ], "\(proxy)")
        let route = lines.drop { !$0.hasPrefix("chain route") }.prefix { !$0.hasPrefix("chain proxy") }
        #expect(route.contains("ip daddr 192.0.2.0/24 meta l4proto tcp th dport 443 counter meta mark set meta mark & 0xff00ffff | 0x00400000"), "direction any: outbound too")
        #expect(!route.contains { $0.contains("9090") || $0.contains("dport 22") }, "inbound rules are not in the route chain")
        #expect(settings.includedNetworkRules[0].description == "inbound from 203.0.113.0/24 to port 9090 tcp")
    }

    @Test("inbound rule validation: TCP only, no host, one address family; older stored rules read as outbound")
    func inboundRuleValidation() throws {
        func refusal(_ rule: NetworkRule) -> String? {
            do {
                try TransparentProxyNetworkSettings(includedNetworkRules: [rule]).validate()
                return nil
            } catch { return error.message }
        }
        #expect(refusal(NetworkRule(remoteNetwork: nil, localPort: 22, protocol: .udp, direction: .inbound))?.contains("TCP flows only") == true)
        #expect(refusal(NetworkRule(remoteNetwork: nil, localPort: 22, protocol: .any, direction: .any))?.contains("TCP flows only") == true)
        var host = NetworkRule(destinationHost: NetworkEndpoint(hostname: "site.test", port: 0), protocol: .tcp)
        host.direction = .inbound
        #expect(refusal(host)?.contains("outbound flows only") == true)
        #expect(refusal(NetworkRule(remoteNetwork: try IPPrefix("2001:db8::/32"), localNetwork: try IPPrefix("192.0.2.0/24"), protocol: .tcp, direction: .inbound))?.contains("different address families") == true)
        #expect(refusal(NetworkRule(remoteNetwork: nil, protocol: .tcp, direction: .inbound)) == nil, "every inbound TCP connection is a rule")
        let stored = try JSONEncoder().encode(NetworkRule(remoteNetwork: try IPPrefix("203.0.113.0/24"), localPort: 9090, protocol: .tcp, direction: .inbound))
        #expect(try JSONDecoder().decode(NetworkRule.self, from: stored).direction == .inbound)
    }

    @Test("host rule validation: a name that is not a DNS name, an address, or a rule with both or neither destination is refused, naming the rule")
    func hostRuleValidation() throws {
        func refusal(_ rule: NetworkRule) -> String? {
            do {
                try TransparentProxyNetworkSettings(includedNetworkRules: [NetworkRule(destinationNetwork: try IPPrefix("0.0.0.0/0")), rule]).validate()
                return nil
            } catch { return error.message }
        }
        #expect(refusal(NetworkRule(destinationHost: NetworkEndpoint(hostname: "www.site.test", port: 443))) == nil)
        #expect(refusal(NetworkRule(destinationHost: NetworkEndpoint(hostname: "_dns.site.test", port: 0))) == nil)
        for bad in ["192.0.2.1", "bad name", "-x.test", "a..b", "", String(repeating: "a", count: 64) + ".test", "x/y"] {
            let message = refusal(NetworkRule(destinationHost: NetworkEndpoint(hostname: bad, port: 0)))
            #expect(message?.contains("includedNetworkRules[1]") == true, "\(bad) refused naming the rule")
        }
        var both = NetworkRule(destinationHost: NetworkEndpoint(hostname: "site.test", port: 0))
        both.destinationNetwork = try IPPrefix("10.0.0.0/8")
        #expect(refusal(both)?.contains("both") == true)
        var neither = both
        neither.destinationNetwork = nil
        neither.destinationHost = nil
        #expect(refusal(neither)?.contains("neither") == true)
        // A rule decoded from an older netextd's JSON (no destinationHost) is a network rule.
        let old = try JSONDecoder().decode(NetworkRule.self, from: Data(#"{"destinationNetwork":"10.0.0.0/8","transportProtocol":"tcp"}"#.utf8))
        #expect(!old.isHostRule && old.destinationNetwork != nil && old.direction == .outbound)
    }

    @Test("transparent proxy settings: refused without included rules or with too many, naming the field; UDP alone is accepted")
    func transparentSettingsValidation() throws {
        let any = NetworkRule(destinationNetwork: try IPPrefix("0.0.0.0/0"))
        try TransparentProxyNetworkSettings(includedNetworkRules: [any]).validate()
        #expect(throws: NetExtError.self) { try TransparentProxyNetworkSettings(includedNetworkRules: []).validate() }
        try TransparentProxyNetworkSettings(includedNetworkRules: [NetworkRule(destinationNetwork: try IPPrefix("::/0"), protocol: .udp)]).validate()
        do {
            try TransparentProxyNetworkSettings(includedNetworkRules: [any], excludedNetworkRules: Array(repeating: any, count: 1_025)).validate()
            Issue.record("1,025 rules accepted")
        } catch { #expect(error.message.contains("excludedNetworkRules")) }
        #expect(NetworkRule(destinationNetwork: try IPPrefix("192.0.2.0/24"), destinationPort: 0).destinationPort == nil, "port 0 is any port, as Apple's")
    }

    @Test("a tunnel that is not connected: its set and marks stay, no masquerade, no DNS redirect; with no cgroups, no elements and no level rule")
    func disconnectedMember() {
        let steering = FlowSteering(members: [.init(configuration: UUID(), mode: .include, mark: FlowSteering.mark(slot: 3), interface: "")])
        #expect(steering.isActive)
        #expect(steering.ruleset.contains("set apps_83 {\n    type cgroupsv2\n  }"))
        #expect(!steering.ruleset.contains("elements"))
        #expect(!steering.ruleset.contains("socket cgroupv2"))
        #expect(!steering.ruleset.contains("postrouting"))
        #expect(!steering.ruleset.contains("dnat"))
        #expect(!FlowSteering().isActive)
    }

    @Test("per-app on demand: while the tunnel is down its apps' packets are logged (rate-limited) and held; connected, neither")
    func onDemandChain() {
        let mark = FlowSteering.mark(slot: 2)
        #expect(FlowSteering.onDemandLogGroup(mark: mark) == 7202)
        var member = FlowSteering.Member(configuration: UUID(), mode: .include, mark: mark, interface: "", onDemandLogGroup: 7202)
        let lines = FlowSteering(members: [member]).ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.contains("type filter hook output priority -10; policy accept;"))
        #expect(lines.contains("oifname != \"lo\" meta mark & 0x00ff0000 == 0x00820000 limit rate 20/second log group 7202"))
        #expect(lines.contains("oifname != \"lo\" meta mark & 0x00ff0000 == 0x00820000 counter drop"))
        member.interface = "netext0"
        #expect(!FlowSteering(members: [member]).ruleset.contains("log group"))
    }

    @Test("app cgroups: netext run's, systemd's and Flatpak's scopes and services, escaped names, explicit unit patterns; descendants left to the ancestor")
    func matcher() throws {
        let office = try AppIdentifier("org.example.Office")
        let officeTwo = try AppIdentifier("org.example.Office-Two")
        let firefox = try AppIdentifier("org.mozilla.firefox")
        let matcher = AppCgroupMatcher(apps: [
            .init(office), .init(officeTwo), .init(firefox, extraPatterns: [try UnitNamePattern("snap.firefox.*")]),
        ], launchRoot: "netext-apps")
        #expect(matcher.app(ofCgroup: "netext-apps/org.example.Office") == office)
        #expect(matcher.app(ofCgroup: "netext-apps/org.example.Unknown") == nil)
        #expect(matcher.app(ofCgroup: "netext-apps/org.example.Office/child") == nil)
        #expect(matcher.app(ofCgroup: "elsewhere/netext-apps/org.example.Office") == nil)
        #expect(matcher.app(ofCgroup: "user.slice/user-1000.slice/user@1000.service/app.slice/app-flatpak-org.example.Office-4711.scope") == office)
        #expect(matcher.app(ofCgroup: "user.slice/app-gnome-org.example.Office-12.scope") == office)
        #expect(matcher.app(ofCgroup: "user.slice/app-org.example.Office@3b1f.service") == office)
        #expect(matcher.app(ofCgroup: "user.slice/app-gnome-org.example.Office\\x2dTwo-12.scope") == officeTwo, "escaped, and the longer identifier wins")
        #expect(matcher.app(ofCgroup: "user.slice/app-org.example.Office-Two-12.scope") == officeTwo)
        #expect(matcher.app(ofCgroup: "system.slice/snap.firefox.firefox-1234.scope") == firefox)
        #expect(matcher.app(ofCgroup: "user.slice/app-org.example.Officer-12.scope") == nil)
        let found = matcher.cgroups(in: [
            "user.slice/app-flatpak-org.example.Office-1.scope/inner", "user.slice", "user.slice/app-flatpak-org.example.Office-1.scope",
            "netext-apps", "netext-apps/org.mozilla.firefox", "system.slice/snap.firefox.firefox-9.scope",
        ])
        #expect(found.map(\.path) == ["netext-apps/org.mozilla.firefox", "system.slice/snap.firefox.firefox-9.scope", "user.slice/app-flatpak-org.example.Office-1.scope"])
    }

    @Test("property: random trees — every app cgroup is found once, none is covered by an ancestor of the same app, nothing else is claimed")
    func matcherProperty() throws {
        var generator = SystemRandomNumberGenerator()
        let ids = try ["org.a.One", "org.a.Two", "org.b.One-Extra", "com.c.D"].map(AppIdentifier.init)
        let matcher = AppCgroupMatcher(apps: ids.map { AppCgroupMatcher.App($0) }, launchRoot: "netext-apps")
        for _ in 0..<300 {
            var paths: [String] = []
            for _ in 0..<Int.random(in: 1...40, using: &generator) {
                let depth = Int.random(in: 1...6, using: &generator)
                var components: [String] = []
                for _ in 0..<depth {
                    let id = ids.randomElement(using: &generator)!.rawValue
                    let choices = ["user.slice", "app.slice", "app-\(id)-\(Int.random(in: 1...99, using: &generator)).scope", "app-flatpak-\(id)-7.scope",
                                   "netext-apps", id, "x\(Int.random(in: 0...9, using: &generator))"]
                    components.append(choices.randomElement(using: &generator)!)
                }
                for end in 1...components.count { paths.append(components[..<end].joined(separator: "/")) }
            }
            paths = Array(Set(paths)).shuffled(using: &generator)
            let found = matcher.cgroups(in: paths)
            #expect(Set(found.map(\.path)).count == found.count)
            for cgroup in found {
                #expect(matcher.app(ofCgroup: cgroup.path) == cgroup.app)
                #expect(!AppCgroupMatcher.ancestors(of: cgroup.path).contains { ancestor in found.contains { $0.path == ancestor && $0.app == cgroup.app } })
            }
            for path in paths {
                guard let app = matcher.app(ofCgroup: path) else { continue }
                let covered = AppCgroupMatcher.ancestors(of: path).contains { matcher.app(ofCgroup: $0) == app }
                #expect(covered || found.contains { $0.path == path }, "\(path) belongs to \(app) and is neither found nor covered")
            }
        }
    }

    @Test("the kill switch lets excluded apps out; a per-app VPN's kill switch holds only its own apps")
    func guardExceptions() throws {
        let excludeGuard = TrafficGuard(members: [.init(configuration: UUID(), providerUID: 65534, blocksAll: true, apps: .init(mode: .exclude, mark: Self.mark))])
        let lines = excludeGuard.ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let accept = try #require(lines.firstIndex(of: "meta mark & 0x00ff0000 == 0x00800000 accept"))
        let drop = try #require(lines.firstIndex(of: "counter drop"))
        #expect(accept < drop)
        #expect(!excludeGuard.dropsDirectPacket(to: [100, 64, 0, 80], mark: Self.mark))
        #expect(excludeGuard.dropsDirectPacket(to: [100, 64, 0, 80], mark: 0))

        let includeGuard = TrafficGuard(members: [.init(configuration: UUID(), providerUID: 65534, blocksAll: true, apps: .init(mode: .include, mark: Self.mark))])
        #expect(includeGuard.ruleset.contains("meta mark & 0x00ff0000 == 0x00800000 counter drop"))
        #expect(!includeGuard.ruleset.contains("\n    counter drop"))
        #expect(includeGuard.dropsDirectPacket(to: [100, 64, 0, 80], mark: Self.mark))
        #expect(!includeGuard.dropsDirectPacket(to: [100, 64, 0, 80], mark: 0))
        // With a kill switch of a whole-machine tunnel beside it, everything unmarked is held too.
        let both = TrafficGuard(members: includeGuard.members + [.init(configuration: UUID(), providerUID: 65534, blocksAll: true)])
        #expect(both.ruleset.contains("\n    counter drop"))
    }

    @Test("app rules: stored configurations without them still decode; a per-app VPN takes appRules only, others excludedAppRules only; each named fault")
    func appRulesValidation() throws {
        let old = #"{"providerBundleIdentifier":"com.netext.tunnel","providerType":"packet-tunnel","serverAddress":"vpn.example","providerConfiguration":{},"includeAllNetworks":false,"excludeLocalNetworks":false,"enforceRoutes":false}"#
        let decoded = try JSONDecoder().decode(TunnelProviderProtocol.self, from: Data(old.utf8))
        #expect(decoded.appRules.isEmpty && decoded.excludedAppRules.isEmpty && !decoded.isPerApp)
        let rule = try AppRule(matchSigningIdentifier: AppIdentifier("org.example.App"))
        var settings = TunnelProviderProtocol(providerBundleIdentifier: "com.netext.tunnel", serverAddress: "vpn.example", appRules: [rule])
        #expect(throws: NetExtError.self) { try settings.validateAppRules() }
        do { try settings.validateAppRules() } catch { #expect(error.message.contains("appRules: only a per-app VPN")) }
        settings.perAppUUID = "A"
        try settings.validateAppRules()
        settings.appRules = [rule, rule]
        do { try settings.validateAppRules(); Issue.record("a duplicate was accepted") } catch { #expect(error.message.contains("appears more than once")) }
        let limited = try AppRule(matchSigningIdentifier: AppIdentifier("org.example.App"), matchDomains: ["office.example"])
        settings.appRules = [limited]
        try settings.validateAppRules()
        settings.appRules = []
        settings.excludedAppRules = [rule]
        do { try settings.validateAppRules(); Issue.record("an exclusion on a per-app VPN was accepted") } catch { #expect(error.message.contains("excludedAppRules")) }
        settings.perAppUUID = nil
        try settings.validateAppRules()
        settings.excludedAppRules = [limited]
        do { try settings.validateAppRules(); Issue.record("matchDomains on an excluded app was accepted") } catch {
            #expect(error.message.contains("excludedAppRules: matchDomains (org.example.App)"))
        }
        // Round trip, with a unit pattern.
        settings.excludedAppRules = [try AppRule(matchSigningIdentifier: AppIdentifier("io.snapcraft.firefox"), matchPath: "/snap/bin/firefox", matchUnits: [UnitNamePattern("snap.firefox.*")])]
        let again = try JSONDecoder().decode(TunnelProviderProtocol.self, from: JSONEncoder().encode(settings))
        #expect(again == settings)
    }

    @Test("a domain-limited rule: its own cgroup set, destination sets with timeouts, marks only toward them, DNS to netextd's resolver on loopback; not in the tunnel's own set")
    func domainLimitedRuleset() throws {
        let full = FlowSteering.AppCgroup(app: try AppIdentifier("org.example.Full"), path: "netext-apps/org.example.Full")
        let mail = FlowSteering.AppCgroup(app: try AppIdentifier("org.example.Mail"), path: "user.slice/app-org.example.Mail-7.scope")
        var apps = FlowSteering.DomainLimitedApps(
            index: 0, cgroups: [mail],
            destinations: [.init(address: [10, 20, 0, 5], secondsLeft: 300), .init(address: [0xfd, 0x20] + [UInt8](repeating: 0, count: 13) + [5], secondsLeft: 60)],
            resolver: .init(port: 40123, hasIPv6: true))
        var member = FlowSteering.Member(
            configuration: UUID(), mode: .include, mark: FlowSteering.mark(slot: 0), interface: "netext0", cgroups: [full],
            dnsServers: ["10.20.0.53"], tunnelAddresses: [try IPPrefix("10.99.0.2/32")], domainLimited: [apps])
        var ruleset = FlowSteering(members: [member]).ruleset
        // The domain-limited app's cgroup is not in the tunnel's own set: no mark for every flow.
        #expect(ruleset.contains("  set apps_80 {\n    type cgroupsv2\n    elements = { \"netext-apps/org.example.Full\" }\n  }"))
        #expect(ruleset.contains("  set dapps_80_0 {\n    type cgroupsv2\n    elements = { \"user.slice/app-org.example.Mail-7.scope\" }\n  }"))
        #expect(ruleset.contains("  set dst4_80_0 {\n    type ipv4_addr\n    flags timeout\n    elements = { 10.20.0.5 timeout 300s }\n  }"))
        #expect(ruleset.contains("  set dst6_80_0 {\n    type ipv6_addr\n    flags timeout\n    elements = { fd20::5 timeout 60s }\n  }"))
        #expect(ruleset.contains("    socket cgroupv2 level 2 @dapps_80_0 ip daddr @dst4_80_0 counter meta mark set meta mark & 0xff00ffff | 0x00800000"))
        #expect(ruleset.contains("    socket cgroupv2 level 2 @dapps_80_0 ip6 daddr @dst6_80_0 counter meta mark set"))
        #expect(ruleset.contains("    socket cgroupv2 level 2 @dapps_80_0 meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53 dnat ip to 127.0.0.1:40123"))
        #expect(ruleset.contains("    socket cgroupv2 level 2 @dapps_80_0 meta nfproto ipv6 meta l4proto { tcp, udp } th dport 53 dnat ip6 to [::1]:40123"))
        // The full app's DNS still goes to the tunnel's resolver, after the domain-limited rules.
        #expect(ruleset.contains("meta mark & 0x00ff0000 == 0x00800000 meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53 dnat ip to 10.20.0.53"))
        // Disconnected: no resolver, no redirect; nothing learned: empty sets, rules kept.
        apps.resolver = nil
        apps.destinations = []
        member.domainLimited = [apps]
        member.dnsServers = []
        member.interface = ""
        ruleset = FlowSteering(members: [member]).ruleset
        #expect(!ruleset.contains("chain dns"))
        #expect(ruleset.contains("  set dst4_80_0 {\n    type ipv4_addr\n    flags timeout\n  }"))
        #expect(ruleset.contains("@dapps_80_0 ip daddr @dst4_80_0"))
    }

    @Test("sockets marked at creation by eBPF: their cgroup needs no set element, no rule and no translation — no nat chain, so no connection tracking; a cgroup without it is marked and translated as before")
    func socketMarkedCgroups() throws {
        let launched = FlowSteering.AppCgroup(app: try AppIdentifier("org.example.Office"), path: "netext-apps/org.example.Office")
        let scope = FlowSteering.AppCgroup(app: try AppIdentifier("org.example.Office"), path: "user.slice/u.slice/app-org.example.Office-3.scope")
        for mode in [FlowSteering.Mode.include, .exclude] {
            var member = FlowSteering.Member(
                configuration: UUID(), mode: mode, mark: FlowSteering.mark(slot: 1), interface: "netext0", cgroups: [launched, scope],
                tunnelAddresses: [try IPPrefix("10.99.0.2/32")], socketMarked: [launched.path, scope.path])
            var ruleset = FlowSteering(members: [member]).ruleset
            #expect(ruleset.contains("  set apps_81 {\n    type cgroupsv2\n  }"), "\(mode)")
            #expect(!ruleset.contains("socket cgroupv2"), "\(mode)")
            #expect(!ruleset.contains("type nat"), "\(mode): no nat chain at all")
            // Per-app on demand: the first flow, held while the tunnel was down, has the
            // underlay's address when it is let through.
            member.isOnDemand = true
            #expect(FlowSteering(members: [member]).ruleset.contains("masquerade") == (mode == .include), "\(mode)")
            member.isOnDemand = false
            member.socketMarked = [launched.path]
            ruleset = FlowSteering(members: [member]).ruleset
            #expect(ruleset.contains("elements = { \"user.slice/u.slice/app-org.example.Office-3.scope\" }"), "\(mode)")
            #expect(ruleset.contains("socket cgroupv2 level 3 @apps_81 counter meta mark set"), "\(mode)")
            #expect(!ruleset.contains("socket cgroupv2 level 2 "), "\(mode)")
            #expect(ruleset.contains("masquerade"), "\(mode)")
        }
    }

    @Test("learned destinations: TTLs clamped to a minute and a day, repeats within half a lifetime change nothing, expiry, the capacity keeps the longest-lived")
    func learnedDestinations() {
        var learned = LearnedDestinations()
        let start = ContinuousClock.now
        var changed = learned.learn([([10, 0, 0, 1], 5), ([10, 0, 0, 2], 300), ([1, 2, 3], 300)], now: start)
        #expect(changed)
        #expect(learned.count == 2)  // a 3-byte address is not one
        #expect(learned.alive(now: start) == [.init(address: [10, 0, 0, 1], secondsLeft: 60), .init(address: [10, 0, 0, 2], secondsLeft: 300)])
        changed = learned.learn([([10, 0, 0, 2], 300)], now: start + .seconds(100))
        #expect(!changed)  // 200 s left of 300: the table stays
        changed = learned.learn([([10, 0, 0, 2], 300)], now: start + .seconds(200))
        #expect(changed)  // 100 s left: renewed
        #expect(learned.alive(now: start + .seconds(200)).last == .init(address: [10, 0, 0, 2], secondsLeft: 300))
        changed = learned.learn([([10, 0, 0, 3], 999_999)], now: start)
        #expect(changed)
        #expect(learned.alive(now: start).last?.secondsLeft == 86_400)
        learned.expire(now: start + .seconds(61))
        #expect(!learned.alive(now: start + .seconds(61)).contains { $0.address == [10, 0, 0, 1] })
        var full = LearnedDestinations()
        var many: [(address: [UInt8], ttl: UInt32)] = []
        for index in 0..<(LearnedDestinations.capacity + 10) {
            let address: [UInt8] = [10, 1, UInt8(index >> 8), UInt8(index & 0xff)]
            many.append((address, UInt32(100 + index)))
        }
        _ = full.learn(many, now: start)
        #expect(full.count == LearnedDestinations.capacity)
        #expect(!full.alive(now: start).contains { $0.address == [10, 1, 0, 0] })  // the shortest-lived left
    }
}
