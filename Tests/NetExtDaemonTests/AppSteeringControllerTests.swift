import Foundation
import NetExtCore
import Synchronization
import NetExtTesting
import Testing
@testable import NetExtDaemon

@Suite("Per-app steering in netextd, over a fake cgroup tree and the recording applier")
struct AppSteeringControllerTests {
    let applier = RecordingNetworkApplier()
    let cgroups = FakeAppCgroups()
    let worker: NetworkWorker
    let steering: AppSteeringController

    init() {
        worker = NetworkWorker(applier: applier)
        steering = AppSteeringController(host: cgroups, launchRoot: "netext-apps-test", network: worker, logger: .init(label: "test"))
    }

    static func tunnel(_ name: String, perApp: Bool, apps: [String], enabled: Bool = true) throws -> NetExtCore.Configuration {
        let rules = try apps.map { try AppRule(matchSigningIdentifier: AppIdentifier($0)) }
        return NetExtCore.Configuration(
            owner: Owner(uid: 0, appIdentifier: "app.a"), localizedDescription: name, isEnabled: enabled,
            protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(
                providerBundleIdentifier: "com.example.t", serverAddress: "vpn.example.test", perAppUUID: perApp ? "U" : nil,
                appRules: perApp ? rules : [], excludedAppRules: perApp ? [] : rules)))
    }

    /// Waits (bounded) until the recorded steering satisfies `condition`.
    func eventually(_ condition: (FlowSteering?) -> Bool) async -> Bool {
        for _ in 0..<200 {
            await worker.drain()
            if condition(applier.currentSteering) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    @Test("an enabled per-app VPN gets a mark and a set; a launched app's cgroup joins it before place returns; disabled, the table goes")
    func includeLifecycle() async throws {
        let office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Office"])
        await steering.update(office)
        #expect(await steering.routing(for: office.id) == .include(mark: FlowSteering.mark(slot: 0)))
        #expect(cgroups.isWatched)
        let placed = try await steering.place(pid: 4242, app: try AppIdentifier("org.example.Office"), executable: "/usr/bin/curl")
        #expect(placed.cgroup == "netext-apps-test/org.example.Office")
        #expect(placed.binding?.configuration.id == office.id)
        #expect(cgroups.processes(in: placed.cgroup) == [4242])
        await worker.drain()
        let member = try #require(applier.currentSteering?.members.first)
        #expect(member.cgroups.map(\.path) == ["netext-apps-test/org.example.Office"])
        #expect(member.mode == .include && member.interface.isEmpty)
        #expect(applier.currentSteering?.nftPathPrefix == "unified/")
        #expect(cgroups.socketMarks == ["netext-apps-test/org.example.Office": FlowSteering.mark(slot: 0)], "new sockets there are marked at creation")

        await steering.tunnelUp(office.id, interface: "netext0", addresses: [try IPPrefix("10.99.0.2/32")], resolvers: ["10.20.0.53"])
        await worker.drain()
        #expect(applier.currentSteering?.members.first?.dnsServers == ["10.20.0.53"])
        await steering.tunnelDown(office.id, interface: "netext7")
        await worker.drain()
        #expect(applier.currentSteering?.members.first?.interface == "netext0", "another interface's end leaves the current one alone")
        await steering.tunnelDown(office.id, interface: "netext0")
        await worker.drain()
        #expect(applier.currentSteering?.members.first?.interface == "" && applier.currentSteering?.members.first?.dnsServers == [])

        var disabled = office
        disabled.isEnabled = false
        await steering.update(disabled)
        await worker.drain()
        #expect(applier.currentSteering?.isActive == false)
        #expect(await steering.routing(for: office.id) == nil)
        #expect(cgroups.socketMarks.isEmpty, "disabled: the socket-creation mark is taken off")
    }

    @Test("a scope made after the binding is found through the watcher; one removed leaves the set")
    func scopesFromTheWatcher() async throws {
        let office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Viewer"])
        await steering.update(office)
        cgroups.make("user.slice/user-1000.slice/app-flatpak-org.example.Viewer-77.scope")
        #expect(await eventually { $0?.members.first?.cgroups.map(\.path) == ["user.slice/user-1000.slice/app-flatpak-org.example.Viewer-77.scope"] })
        cgroups.make("user.slice/user-1000.slice/app-gnome-org.example.Other-1.scope")
        cgroups.remove("user.slice/user-1000.slice/app-flatpak-org.example.Viewer-77.scope")
        #expect(await eventually { $0?.members.first?.cgroups.isEmpty == true })
    }

    @Test("exclude mode: its own mark, resolvers outside the tunnel; each enabled tunnel a mark of its own")
    func excludeAndMarks() async throws {
        let full = try Self.tunnel("Full", perApp: false, apps: ["org.example.Direct"])
        let office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Office"])
        await steering.update(full, bypassResolvers: ["198.51.100.53"])
        await steering.update(office)
        #expect(await steering.routing(for: full.id) == .exclude(mark: FlowSteering.mark(slot: 0)))
        #expect(await steering.routing(for: office.id) == .include(mark: FlowSteering.mark(slot: 1)))
        await worker.drain()
        #expect(applier.currentSteering?.members.first { $0.configuration == full.id }?.dnsServers == ["198.51.100.53"])
        let plain = try Self.tunnel("Plain", perApp: false, apps: [])
        await steering.update(plain)
        #expect(await steering.routing(for: plain.id) == nil, "a tunnel without app rules routes by destination only")
        let statuses = await steering.statuses(isVisible: { _ in true }, isConnected: { $0 == office.id })
        #expect(statuses.map(\.app) == ["org.example.Direct", "org.example.Office"])
        #expect(statuses.map(\.isConnected) == [false, true])
    }

    @Test("matchPath: netext run of another program as the app is refused, naming both")
    func matchPath() async throws {
        var office = try Self.tunnel("Office", perApp: true, apps: [])
        guard case .tunnelProvider(var settings) = office.protocolConfiguration else { return }
        settings.appRules = [try AppRule(matchSigningIdentifier: AppIdentifier("org.example.Office"), matchPath: "/usr/bin/office")]
        office.protocolConfiguration = .tunnelProvider(settings)
        await steering.update(office)
        await #expect(throws: NetExtError.self) { _ = try await steering.place(pid: 1, app: try AppIdentifier("org.example.Office"), executable: "/usr/bin/curl") }
        do { _ = try await steering.place(pid: 1, app: try AppIdentifier("org.example.Office"), executable: "/usr/bin/curl") } catch {
            #expect(error.message.contains("/usr/bin/office") && error.message.contains("/usr/bin/curl"))
        }
        _ = try await steering.place(pid: 1, app: try AppIdentifier("org.example.Office"), executable: "/usr/bin/office")
    }

    @Test("nft refusing a vanished cgroup: scanned again and retried; a restart replaces what was left; shutdown removes the table and empty launch cgroups")
    func retryRestoreShutdown() async throws {
        let office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Office"])
        applier.failSteering(times: 2)
        await steering.update(office)
        await worker.drain()
        #expect(applier.currentSteering?.isActive == true, "the third attempt is installed")
        _ = try await steering.place(pid: 7, app: try AppIdentifier("org.example.Office"), executable: nil)

        let restarted = AppSteeringController(host: cgroups, launchRoot: "netext-apps-test", network: worker, logger: .init(label: "test"))
        await restarted.restore([office, try Self.tunnel("Off", perApp: true, apps: ["org.example.Off"], enabled: false)])
        await worker.drain()
        #expect(applier.currentSteering?.members.count == 1)
        #expect(applier.currentSteering?.members.first?.cgroups.map(\.path) == ["netext-apps-test/org.example.Office"])
        await restarted.restore([])
        await worker.drain()
        #expect(applier.currentSteering?.isActive == false, "nothing to steer: what an earlier netextd left is removed")

        cgroups.exit(pid: 7)
        await restarted.shutdown()
        #expect(!cgroups.scan().contains { $0.hasPrefix("netext-apps-test") })
        #expect(!cgroups.isWatched)
    }

    @Test("per-app on demand: a log group opened while the VPN is down, its packets reported as the configuration's flow, closed once connected or off")
    func onDemandTrigger() async throws {
        let opened = Mutex<[UInt16: @Sendable () -> Void]>([:])
        let closed = Mutex<[UInt16]>([])
        let opener: AppSteeringController.TriggerOpener = { group, onFlow in
            opened.withLock { $0[group] = onFlow }
            return { closed.withLock { $0.append(group) } }
        }
        let controller = AppSteeringController(host: cgroups, launchRoot: "netext-apps-test", network: worker, logger: .init(label: "test"), openTrigger: opener)
        let seen = Mutex<[UUID]>([])
        await controller.setAppFlowHandler { id in seen.withLock { $0.append(id) } }
        var office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Office"])
        await controller.update(office)
        #expect(opened.withLock { $0.isEmpty }, "on demand off: no log group")
        office.isOnDemandEnabled = true
        await controller.update(office)
        await worker.drain()
        let group = FlowSteering.onDemandLogGroup(mark: FlowSteering.mark(slot: 0))
        let flow = try #require(opened.withLock { $0[group] })
        #expect(applier.currentSteering?.members.first?.onDemandLogGroup == group)
        flow()
        for _ in 0..<100 where seen.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(seen.withLock { $0 } == [office.id])
        await controller.tunnelUp(office.id, interface: "netext0", addresses: [], resolvers: [])
        await worker.drain()
        #expect(closed.withLock { $0 } == [group])
        #expect(applier.currentSteering?.members.first?.onDemandLogGroup == nil)
    }

    @Test("without a cgroup v2 hierarchy, launching an app says why")
    func noHierarchy() async throws {
        let without = AppSteeringController(host: nil, hostProblem: "no cgroup v2 hierarchy is mounted", launchRoot: "x", network: worker, logger: .init(label: "test"))
        do {
            _ = try await without.place(pid: 1, app: try AppIdentifier("org.example.App"), executable: nil)
            Issue.record("placed without a hierarchy")
        } catch {
            #expect(error.message == "per-app routing needs cgroup v2: no cgroup v2 hierarchy is mounted")
        }
    }
}
