import Foundation
import NetExtCore
import NetExtTesting
import Testing
@testable import NetExtDaemon

@Suite("Kill switch and enforced routes, over the recording applier")
struct KillSwitchTests {
    let applier = RecordingNetworkApplier(localNetworks: [try! IPPrefix("192.168.1.0/24")])
    let worker: NetworkWorker
    let killSwitch: KillSwitch

    init() {
        worker = NetworkWorker(applier: applier)
        killSwitch = KillSwitch(network: worker, logger: .init(label: "test"))
    }

    func tunnel(_ name: String, enabled: Bool = true, includeAll: Bool = false, excludeLocal: Bool = false, enforce: Bool = false) -> NetExtCore.Configuration {
        NetExtCore.Configuration(
            owner: Owner(uid: 0, appIdentifier: "app.a"), localizedDescription: name, isEnabled: enabled,
            protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(
                providerBundleIdentifier: "com.example.t", serverAddress: "vpn.example.test",
                includeAllNetworks: includeAll, excludeLocalNetworks: excludeLocal, enforceRoutes: enforce)))
    }

    @Test("includeAllNetworks with excludeLocalNetworks: one member that blocks all but the local networks; lifted on release")
    func engageAndRelease() async throws {
        let guardian = killSwitch
        let office = tunnel("Office", includeAll: true, excludeLocal: true)
        try await guardian.engage(office, manifest: nil)
        #expect(await guardian.isEngaged(office.id))
        let member = try #require(applier.currentGuard?.members.first)
        let lan = try IPPrefix("192.168.1.0/24")
        #expect(member.blocksAll && member.localNetworks == [lan])
        #expect(member.providerUID == UInt32.max - 1, "a provider that cannot be found gets a uid no process has")
        await guardian.release(office.id)
        #expect(await !guardian.isEngaged(office.id))
        await worker.drain()
        #expect(applier.currentGuard?.members.isEmpty == true)
    }

    @Test("a configuration that asks for neither, or is disabled, installs nothing")
    func nothingToGuard() async throws {
        let guardian = killSwitch
        try await guardian.engage(tunnel("Plain"), manifest: nil)
        try await guardian.engage(tunnel("Off", enabled: false, includeAll: true), manifest: nil)
        #expect(applier.events.isEmpty)
    }

    @Test("enforceRoutes: the tunnel's routes join the guard once it claims them; other configurations are left alone")
    func enforcedRoutes() async throws {
        let guardian = killSwitch
        let office = tunnel("Office", enforce: true)
        try await guardian.engage(office, manifest: nil)
        #expect(applier.currentGuard?.isActive == false, "enforced routes without routes yet block nothing")
        let office20 = try IPPrefix("10.20.0.0/16")
        try await guardian.enforce(routes: [office20], for: office.id)
        #expect(applier.currentGuard?.members.first?.enforcedRoutes == [office20])
        let before = applier.events.count
        try await guardian.enforce(routes: [try IPPrefix("10.30.0.0/16")], for: UUID())
        #expect(applier.events.count == before, "no guard for an unknown configuration")
    }

    @Test("nft refusing the ruleset: the error comes back and the configuration is not counted as guarded")
    func refusedRuleset() async throws {
        let guardian = killSwitch
        applier.failGuards(true)
        let office = tunnel("Office", includeAll: true)
        await #expect(throws: NetExtError.self) { try await guardian.engage(office, manifest: nil) }
        #expect(await !guardian.isEngaged(office.id))
    }

    @Test("restore at start: every enabled configuration that asks for a guard, and an empty table when none does")
    func restore() async throws {
        let guardian = killSwitch
        await guardian.restore([tunnel("A", includeAll: true), tunnel("B", enabled: false, includeAll: true), tunnel("C")]) { _ in nil }
        #expect(applier.currentGuard?.members.count == 1)
        let empty = RecordingNetworkApplier()
        let other = KillSwitch(network: NetworkWorker(applier: empty), logger: .init(label: "test"))
        await other.restore([tunnel("C")]) { _ in nil }
        #expect(empty.currentGuard == TrafficGuard(), "whatever an earlier netextd left is replaced by an empty guard")
    }

    @Test("a portal login joins the guard beside its members, a newer grant outlives an older one's timer, and each ends by itself or when ended")
    func portalLogins() async throws {
        let guardian = killSwitch
        let office = tunnel("Office", includeAll: true)
        #expect(try await !guardian.allowPortalLogin(uid: 33, interface: "eth0", seconds: 600), "no guard in force yet")
        try await guardian.engage(office, manifest: nil)
        #expect(applier.currentGuard?.portalLogins == [.init(uid: 33, interface: "eth0")], "kept across members' changes")
        #expect(try await guardian.allowPortalLogin(uid: 1000, interface: "wlan0", seconds: 1))
        #expect(Set(applier.currentGuard?.portalLogins ?? []) == [.init(uid: 33, interface: "eth0"), .init(uid: 1000, interface: "wlan0")])
        #expect(try await guardian.allowPortalLogin(uid: 1000, interface: "wlan0", seconds: 600), "renewed before the first grant's second is up")
        try await Task.sleep(for: .milliseconds(1500))
        await worker.drain()
        #expect(applier.currentGuard?.portalLogins.contains(.init(uid: 1000, interface: "wlan0")) == true, "the older grant's timer did not end the newer grant")
        #expect(await guardian.endPortalLogin(uid: 1000))
        #expect(await !guardian.endPortalLogin(uid: 1000), "nothing left to end")
        #expect(try await guardian.allowPortalLogin(uid: 7, interface: "eth1", seconds: 1))
        let deadline = ContinuousClock.now + .seconds(30)  // a second's timer; the bound is for a loaded CI (5 s was missed once)
        while applier.currentGuard?.portalLogins.contains(.init(uid: 7, interface: "eth1")) == true, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            await worker.drain()
        }
        #expect(applier.currentGuard?.portalLogins == [.init(uid: 33, interface: "eth0")], "the one-second grant expired by itself")
    }
}
