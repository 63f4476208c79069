import Foundation
import Testing
@testable import NetExtCore

@Suite("Kill switch and enforced routes")
struct TrafficGuardTests {
    /// A split tunnel to the office (10.20.0.0/16) with one excluded subnet.
    static let officeSettings = PacketTunnelNetworkSettings(
        tunnelRemoteAddress: "192.0.2.1",
        ipv4Settings: IPv4Settings(addresses: ["10.99.0.2"], subnetMasks: ["255.255.255.255"],
            includedRoutes: [IPv4Route(destinationAddress: "10.20.0.0", subnetMask: "255.255.0.0")],
            excludedRoutes: [IPv4Route(destinationAddress: "10.20.9.0", subnetMask: "255.255.255.0")]),
        mtu: 1420)
    let settings = TrafficGuardTests.officeSettings

    @Test("includeAllNetworks routes everything into the tunnel, ignores excluded routes, keeps local networks out")
    func includeAllNetworksPlan() throws {
        let local = try IPPrefix("198.51.100.0/24")
        let plan = try NetworkPlan.make(
            settings: settings, interface: "netext0", table: 7100, rulePriority: 7100, underlyingMTU: 1500,
            policy: .init(includeAllNetworks: true, localNetworks: [local]))
        #expect(plan.includedRoutes == [try IPPrefix("0.0.0.0/0")])
        #expect(plan.applyCommands.contains(["-4", "rule", "add", "priority", "7101", "to", "198.51.100.0/24", "lookup", "main"]))
        #expect(!plan.applyCommands.contains { $0.contains("10.20.9.0/24") })
        #expect(plan.applyCommands.contains(["-4", "rule", "add", "priority", "7100", "to", "192.0.2.1/32", "lookup", "main"]))
    }

    @Test("the guard lets loopback, the tunnels, the providers, neighbour discovery, DHCP and netextd's portal detection through, and drops the rest")
    func killSwitchRules() throws {
        let guardRules = TrafficGuard(members: [
            .init(configuration: UUID(), providerUID: 65534, blocksAll: true, localNetworks: [try IPPrefix("198.51.100.0/24"), try IPPrefix("fe80::/64")]),
        ]).ruleset
        let lines = guardRules.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.prefix(3) == ["add table inet netextd_guard", "flush table inet netextd_guard", "table inet netextd_guard {"])
        let chain = Array(lines.drop { !$0.hasPrefix("type filter hook output") })
        #expect(Array(chain.prefix(12)) == [
            "type filter hook output priority filter; policy accept;",
            "oifname \"lo\" accept",
            "oifname \"netext*\" accept",
            "meta skuid { 65534 } accept",
            "icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } accept",
            "udp sport 68 udp dport 67 accept",
            "udp sport 546 udp dport 547 accept",
            "meta mark & 0x00ff0000 == 0x00030000 accept",
            "ip daddr 198.51.100.0/24 accept",
            "ip6 daddr fe80::/64 accept",
            "counter drop",
            "}",
        ])
    }

    @Test("enforced routes are dropped before local networks are let through; without members nothing is active")
    func enforcedRoutes() throws {
        var guardRules = TrafficGuard(members: [
            .init(configuration: UUID(), providerUID: 1000, blocksAll: false, enforcedRoutes: [try IPPrefix("10.20.0.0/16"), try IPPrefix("10.20.5.0/24"), try IPPrefix("fd20::/64")]),
            .init(configuration: UUID(), providerUID: 1001, blocksAll: true, localNetworks: [try IPPrefix("10.20.0.0/16")]),
        ])
        let lines = guardRules.ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let drop = try #require(lines.firstIndex(of: "ip daddr 10.20.0.0/16 counter drop"))
        let accept = try #require(lines.firstIndex(of: "ip daddr 10.20.0.0/16 accept"))
        #expect(drop < accept)
        #expect(lines.contains("ip daddr 10.20.5.0/24 counter drop"), "overlapping prefixes get rules of their own")
        #expect(lines.contains("ip6 daddr fd20::/64 counter drop"))
        #expect(lines.contains("meta skuid { 1000, 1001 } accept"))
        #expect(guardRules.isActive)
        guardRules.members = [.init(configuration: UUID(), providerUID: 1, blocksAll: false)]
        #expect(!guardRules.isActive)
    }
}

extension TrafficGuardTests {
    @Test("a portal login lets one user out on one interface, before every drop; the model agrees with the rules")
    func portalLogins() throws {
        let guardRules = TrafficGuard(
            members: [.init(configuration: UUID(), providerUID: 65534, blocksAll: true, enforcedRoutes: [try IPPrefix("10.20.0.0/16")])],
            portalLogins: [.init(uid: 1000, interface: "eth0"), .init(uid: 1000, interface: "eth0"), .init(uid: 7, interface: "wl\"an0")])
        let lines = guardRules.ruleset.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let login = try #require(lines.firstIndex(of: "meta skuid 1000 oifname \"eth0\" accept"))
        #expect(lines.filter { $0 == "meta skuid 1000 oifname \"eth0\" accept" }.count == 1, "one rule for a login given twice")
        #expect(lines.contains("meta skuid 7 oifname \"wlan0\" accept"), "no quote reaches nft")
        #expect(login < (try #require(lines.firstIndex(of: "ip daddr 10.20.0.0/16 counter drop"))))
        let portal: [UInt8] = [198, 51, 100, 1]
        #expect(!guardRules.dropsDirectPacket(to: portal, uid: 1000, interface: "eth0"))
        #expect(guardRules.dropsDirectPacket(to: portal, uid: 1000, interface: "eth1"), "only on its interface")
        #expect(guardRules.dropsDirectPacket(to: portal, uid: 1001, interface: "eth0"), "only that user")
        #expect(guardRules.dropsDirectPacket(to: portal))
        #expect(!guardRules.dropsDirectPacket(to: portal, mark: TrafficGuard.detectionMark), "netextd's detection passes")
    }
}

@Suite("The kernel's decisions, as the fakes play them")
struct PlannedRouteTests {
    let settings = TrafficGuardTests.officeSettings

    func route(_ address: String, _ plans: [NetworkPlan]) -> PlannedRoute {
        NetworkPlan.route(to: IPPrefix.parseAddress(address)!, through: plans)
    }

    @Test("a split tunnel takes its routes, not its exclusions, the server or anything else; an empty lookup falls through to main")
    func splitTunnel() throws {
        let plan = try NetworkPlan.make(settings: settings, interface: "netext0", table: 7100, rulePriority: 7100, underlyingMTU: 1500)
        #expect(route("10.20.0.5", [plan]) == .tunnel(plan))
        #expect(route("10.20.9.5", [plan]) == .main)
        #expect(route("192.0.2.1", [plan]) == .main)
        #expect(route("203.0.113.1", [plan]) == .main)
        #expect(route("10.20.0.5", []) == .main)
        #expect(route("2001:db8::1", [plan]) == .main)
    }

    @Test("a full tunnel takes everything but the server and the local networks")
    func fullTunnel() throws {
        let plan = try NetworkPlan.make(
            settings: settings, interface: "netext0", table: 7100, rulePriority: 7100, underlyingMTU: 1500,
            policy: .init(includeAllNetworks: true, localNetworks: [try IPPrefix("198.51.100.0/24")]))
        #expect(route("203.0.113.1", [plan]) == .tunnel(plan))
        #expect(route("10.20.9.5", [plan]) == .tunnel(plan))
        #expect(route("198.51.100.1", [plan]) == .main)
        #expect(route("192.0.2.1", [plan]) == .main)
    }

    @Test("the guard's drop decision matches its rules: enforced routes first, then all but the local networks")
    func guardDecisions() throws {
        let address = { (text: String) in IPPrefix.parseAddress(text)! }
        let blockAll = TrafficGuard(members: [.init(configuration: UUID(), providerUID: 65534, blocksAll: true, localNetworks: [try IPPrefix("198.51.100.0/24")])])
        #expect(blockAll.dropsDirectPacket(to: address("203.0.113.1")))
        #expect(!blockAll.dropsDirectPacket(to: address("198.51.100.1")))
        #expect(blockAll.dropsDirectPacket(to: address("2001:db8::1")))
        let enforce = TrafficGuard(members: [
            .init(configuration: UUID(), providerUID: 65534, blocksAll: false, enforcedRoutes: [try IPPrefix("10.20.0.0/16")]),
            .init(configuration: UUID(), providerUID: 65534, blocksAll: true, localNetworks: [try IPPrefix("10.0.0.0/8")]),
        ])
        #expect(enforce.dropsDirectPacket(to: address("10.20.0.5")), "an enforced route wins over a local network")
        #expect(!enforce.dropsDirectPacket(to: address("10.30.0.5")))
        #expect(!TrafficGuard().dropsDirectPacket(to: address("203.0.113.1")))
    }
}
