import Testing
@testable import NetExtCore

@Suite("Network plan")
struct NetworkPlanTests {
    @Test("a split tunnel routes only its included routes, and keeps the server and exclusions on main")
    func splitTunnel() throws {
        let settings = PacketTunnelNetworkSettings(
            tunnelRemoteAddress: "192.0.2.1",
            ipv4Settings: IPv4Settings(addresses: ["10.99.0.2"], subnetMasks: ["255.255.255.255"],
                includedRoutes: [IPv4Route(destinationAddress: "10.20.0.0", subnetMask: "255.255.0.0")],
                excludedRoutes: [IPv4Route(destinationAddress: "10.20.9.0", subnetMask: "255.255.255.0")]),
            ipv6Settings: IPv6Settings(addresses: ["fd99::2"], networkPrefixLengths: [128], includedRoutes: [.default()]),
            tunnelOverheadBytes: 80)
        let plan = try NetworkPlan.make(settings: settings, interface: "netext0", table: 7100, rulePriority: 7100, underlyingMTU: 1500)
        #expect(plan.mtu == 1420)
        #expect(plan.applyCommands == [
            ["link", "set", "dev", "netext0", "mtu", "1420"],
            ["-4", "address", "add", "10.99.0.2/32", "dev", "netext0"],
            ["-6", "address", "add", "fd99::2/128", "dev", "netext0", "nodad"],
            ["link", "set", "dev", "netext0", "up"],
            ["-4", "route", "replace", "10.20.0.0/16", "dev", "netext0", "table", "7100"],
            ["-6", "route", "replace", "::/0", "dev", "netext0", "table", "7100"],
            ["-4", "rule", "add", "priority", "7100", "to", "192.0.2.1/32", "lookup", "main"],
            ["-4", "rule", "add", "priority", "7101", "to", "10.20.9.0/24", "lookup", "main"],
            ["-4", "rule", "add", "priority", "7102", "lookup", "7100"],
            ["-6", "rule", "add", "priority", "7102", "lookup", "7100"],
        ])
        #expect(plan.teardownCommands.first == ["-6", "rule", "del", "priority", "7102", "lookup", "7100"])
        #expect(plan.teardownCommands.contains(["-4", "route", "flush", "table", "7100"]))
    }

    func plan(address: String = "10.99.0.2", server: String = "192.0.2.1", routes: [String], mtu: Int? = nil, interface: String = "netext0") throws -> NetworkPlan {
        let settings = PacketTunnelNetworkSettings(
            tunnelRemoteAddress: server,
            ipv4Settings: IPv4Settings(addresses: [address], subnetMasks: ["255.255.255.255"],
                includedRoutes: routes.map { IPv4Route(destinationAddress: $0, subnetMask: "255.255.0.0") }),
            mtu: mtu)
        return try NetworkPlan.make(settings: settings, interface: interface, table: 7100, rulePriority: 7100, underlyingMTU: 1500)
    }

    @Test("settings applied again change only what differs: new things first, gone things after, nothing shared is touched")
    func changesOnly() throws {
        let before = try plan(routes: ["10.20.0.0", "10.21.0.0"])
        #expect(before.changeCommands(from: before).isEmpty, "the same plan again changes nothing")
        let after = try plan(address: "10.99.0.3", server: "192.0.2.9", routes: ["10.21.0.0", "10.22.0.0"], mtu: 1380)
        #expect(after.changeCommands(from: before) == [
            ["link", "set", "dev", "netext0", "mtu", "1380"],
            ["-4", "address", "add", "10.99.0.3/32", "dev", "netext0"],
            ["-4", "route", "replace", "10.22.0.0/16", "dev", "netext0", "table", "7100"],
            ["-4", "rule", "add", "priority", "7100", "to", "192.0.2.9/32", "lookup", "main"],
            ["-4", "rule", "del", "priority", "7100", "to", "192.0.2.1/32", "lookup", "main"],
            ["-4", "route", "del", "10.20.0.0/16", "dev", "netext0", "table", "7100"],
            ["-4", "address", "del", "10.99.0.2/32", "dev", "netext0"],
        ])
        // The way back is the same kind of change (what the applier runs to undo a failed one).
        let back = before.changeCommands(from: after)
        #expect(back.contains(["-4", "route", "replace", "10.20.0.0/16", "dev", "netext0", "table", "7100"]))
        #expect(back.contains(["-4", "route", "del", "10.22.0.0/16", "dev", "netext0", "table", "7100"]))
        #expect(!back.contains { $0.contains("10.21.0.0/16") })
    }

    @Test("a plan for another interface replaces the previous one entirely")
    func otherInterface() throws {
        let before = try plan(routes: ["10.20.0.0"])
        let after = try plan(routes: ["10.20.0.0"], interface: "netext1")
        #expect(after.changeCommands(from: before) == before.teardownCommands + after.applyCommands)
    }

    @Test("bad settings name the field", arguments: [
        (PacketTunnelNetworkSettings(tunnelRemoteAddress: "x", ipv4Settings: IPv4Settings(addresses: ["10.0.0.1"], subnetMasks: ["255.0.255.0"])), "ipv4Settings.subnetMasks: '255.0.255.0' is not a subnet mask"),
        (PacketTunnelNetworkSettings(tunnelRemoteAddress: "x", ipv4Settings: IPv4Settings(addresses: ["fd00::1"], subnetMasks: ["255.0.0.0"])), "ipv4Settings.addresses: 'fd00::1' is not IPv4"),
        (PacketTunnelNetworkSettings(tunnelRemoteAddress: "x", ipv4Settings: IPv4Settings(addresses: ["10.0.0.1"], subnetMasks: ["255.255.255.255"], includedRoutes: [IPv4Route(destinationAddress: "nope", subnetMask: "255.0.0.0")])), "'nope/8' is not an IP address or prefix"),
        (PacketTunnelNetworkSettings(tunnelRemoteAddress: "x", ipv4Settings: IPv4Settings(addresses: ["10.0.0.1"], subnetMasks: ["255.255.255.255"]), mtu: 100), "mtu: 100 is outside 576...65535"),
        (PacketTunnelNetworkSettings(tunnelRemoteAddress: "x", ipv4Settings: IPv4Settings(addresses: ["10.0.0.1"], subnetMasks: ["255.255.255.255"]), ipv6Settings: nil, mtu: nil, tunnelOverheadBytes: nil), ""),
    ])
    func invalid(settings: PacketTunnelNetworkSettings, message: String) {
        do {
            _ = try NetworkPlan.make(settings: settings, interface: "t", table: 1, rulePriority: 1, underlyingMTU: nil)
            #expect(message.isEmpty, "expected a refusal: \(message)")
        } catch {
            #expect(!message.isEmpty && error.message.contains(message), "\(error.message)")
        }
    }

    @Test("prefixes parse, mask and compare", arguments: [
        ("10.1.2.3/8", "10.0.0.0/8"), ("fd00::1/64", "fd00::/64"), ("192.0.2.7", "192.0.2.7/32"), ("::", "::/128"),
    ])
    func prefixes(text: String, network: String) throws {
        #expect(try IPPrefix(text, allowHostBits: true).network.description == network)
        #expect(try IPPrefix(network).contains(try IPPrefix(text, allowHostBits: true)))
    }

    @Test("prefix parsing refuses nonsense, naming it")
    func prefixErrors() {
        for text in ["", "10.0.0.0/33", "10.0.0.1/24", "1.2.3", "fd00::/129", "a/b/c"] {
            #expect(throws: NetExtError.self) { try IPPrefix(text) }
        }
        #expect(IPPrefix.length(ofSubnetMask: "255.255.240.0") == 20)
        #expect(IPPrefix.length(ofSubnetMask: "0.0.0.0") == 0)
        #expect(IPPrefix.length(ofSubnetMask: "255.0.255.0") == nil)
        #expect(IPPrefix.subnetMask(length: 20) == "255.255.240.0")
        #expect(IPPrefix.subnetMask(length: 0) == "0.0.0.0")
    }
}
