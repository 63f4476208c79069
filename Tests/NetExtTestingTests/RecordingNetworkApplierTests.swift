import NetExtCore
import NetExtDaemon
import NetExtTesting
import Testing

@Suite("Recording network applier")
struct RecordingNetworkApplierTests {
    static func plan(_ interface: String) throws -> NetworkPlan {
        let settings = PacketTunnelNetworkSettings(
            tunnelRemoteAddress: "192.0.2.1",
            ipv4Settings: IPv4Settings(addresses: ["10.99.0.2"], subnetMasks: ["255.255.255.0"], includedRoutes: [.default()]))
        return try NetworkPlan.make(settings: settings, interface: interface, table: 1000, rulePriority: 1000, underlyingMTU: 1500)
    }

    @Test("applies and teardowns are recorded in order; active plans follow them")
    func records() throws {
        let applier = RecordingNetworkApplier()
        let first = try Self.plan("netext0"), second = try Self.plan("netext1")
        try applier.apply(first)
        try applier.apply(second)
        applier.teardown(first)
        #expect(applier.events == [.applied(first), .applied(second), .tornDown(first)])
        #expect(applier.activePlans == [second])
    }

    @Test("a change in place replaces the active plan; a refused change leaves the previous one active")
    func changes() throws {
        let applier = RecordingNetworkApplier()
        let first = try Self.plan("netext0")
        var second = first
        second.mtu = 1380
        try applier.apply(first)
        try applier.apply(second, replacing: first)
        #expect(applier.events == [.applied(first), .changed(from: first, to: second)])
        #expect(applier.activePlans == [second])
        applier.failApplies(containing: "mtu")
        var third = second
        third.mtu = 1300
        #expect(throws: NetExtError.self) { try applier.apply(third, replacing: second) }
        #expect(applier.activePlans == [second])
    }

    @Test("a failing step is refused like ip refuses it, and nothing is recorded as applied")
    func failure() throws {
        let applier = RecordingNetworkApplier(failingStep: "route")
        #expect(throws: NetExtError.self) { try applier.apply(try Self.plan("netext0")) }
        #expect(applier.activePlans.isEmpty)
        applier.failApplies(containing: nil)
        try applier.apply(try Self.plan("netext0"))
        #expect(applier.activePlans.count == 1)
    }
}
