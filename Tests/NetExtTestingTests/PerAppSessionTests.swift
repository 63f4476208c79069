import Foundation
import NetExtCore
import NetExtLinux
import NetExtTesting
import Testing
@testable import NetExtDaemon

/// Per-app VPN through netextd's session manager over fakes: an in-process provider, the
/// recording applier and an in-memory cgroup tree. No root, no processes.
@Suite("Per-app VPN in the session manager over fakes")
final class PerAppSessionTests {
    static let bundle = "com.example.scripted"
    let directory: String
    let applier = RecordingNetworkApplier()
    let cgroups = FakeAppCgroups()
    let resolver: ResolverConfiguration
    let manager: SessionManager

    init() throws {
        directory = NSTemporaryDirectory() + "netext-perapp-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/providers", withIntermediateDirectories: true)
        // The provider's manifest maps one more app to the VPNUUID, as NETestAppMapping does.
        let manifest = #"{"bundleIdentifier": "\#(Self.bundle)", "extensionPoint": "packet-tunnel", "executable": "/bin/true", "user": "nobody", "testAppMapping": {"CORP": ["org.example.Dev"]}}"#
        try manifest.write(toFile: directory + "/providers/scripted.json", atomically: true, encoding: .utf8)
        resolver = ResolverConfiguration(path: directory + "/resolv.conf", backupPath: directory + "/resolv.conf.netext")
        try "nameserver 10.0.0.53\n".write(toFile: resolver.path, atomically: true, encoding: .utf8)
        manager = SessionManager(
            registry: ProviderRegistry(directory: directory + "/providers"), hub: NotificationHub(), logger: .init(label: "test"),
            applier: applier, resolver: resolver, dnsStubAddress: SocketAddress(address: [127, 0, 0, 1], port: 0),
            startDeadline: .seconds(120), stopDeadline: .milliseconds(300),
            launcher: InProcessProviderLauncher([Self.bundle: .tunnel { ScriptedTunnel() }]),
            appCgroups: cgroups, appLaunchRoot: "netext-apps")
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func tunnel(perApp: Bool, apps: [String]) throws -> NetExtCore.Configuration {
        let rules = try apps.map { try AppRule(matchSigningIdentifier: AppIdentifier($0)) }
        return NetExtCore.Configuration(
            owner: Owner(uid: 0, appIdentifier: "app.a"), localizedDescription: perApp ? "Office Apps" : "Everything", isEnabled: true,
            protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(
                providerBundleIdentifier: Self.bundle, serverAddress: "vpn.example.test",
                providerConfiguration: ["routes": .string("10.20.0.0"), "dns": .string("10.8.0.1")],
                perAppUUID: perApp ? "CORP" : nil, appRules: perApp ? rules : [], excludedAppRules: perApp ? [] : rules)))
    }

    var resolverFile: String { (try? String(contentsOfFile: resolver.path, encoding: .utf8)) ?? "" }

    @Test("include: a default route and a fwmark rule, the apps' DNS to the tunnel's resolver, the machine's resolver file untouched; the manifest's test mapping adds its app")
    func include() async throws {
        let office = try tunnel(perApp: true, apps: ["org.example.Office"])
        await manager.configurationChanged(office, removed: false)
        let started = try await manager.start(office, options: [:], password: nil)
        #expect(started.status == .connected)
        let plan = try #require(applier.activePlans.first)
        #expect(plan.includedRoutes.map(\.description) == ["0.0.0.0/0"])
        #expect(plan.rules.contains { $0.fwmark == FlowSteering.mark(slot: 0) && $0.table == .tunnel(plan.table) })
        #expect(resolverFile == "nameserver 10.0.0.53\n", "a per-app VPN's DNS is its apps' only")
        await manager.network.drain()
        let member = try #require(applier.currentSteering?.members.first)
        #expect(member.interface == "faketun0" && member.dnsServers == ["10.8.0.1"] && member.mode == .include)

        _ = try await manager.appSteering.place(pid: 11, app: try AppIdentifier("org.example.Dev"), executable: nil)
        await manager.network.drain()
        #expect(applier.currentSteering?.members.first?.cgroups.map(\.path) == ["netext-apps/org.example.Dev"])
        let apps = await manager.appStatuses { _ in true }
        #expect(apps.map(\.app) == ["org.example.Dev", "org.example.Office"])
        #expect(apps.filter { !$0.isConnected }.isEmpty)

        _ = await manager.stop(office, reason: .userInitiated)
        for _ in 0..<100 where applier.currentSteering?.members.first?.interface != "" { try await Task.sleep(for: .milliseconds(10)) }
        #expect(applier.currentSteering?.members.first?.interface == "", "stopped: the apps stay marked, nothing leaves through a tunnel")
        var disabled = office
        disabled.isEnabled = false
        await manager.configurationChanged(disabled, removed: false)
        await manager.network.drain()
        #expect(applier.currentSteering?.isActive == false)
    }

    @Test("exclude: the provider's routes, a fwmark rule to main ahead of the tunnel, DNS to the resolvers from before; the kill switch lets the apps out")
    func exclude() async throws {
        var everything = try tunnel(perApp: false, apps: ["org.example.Backup"])
        if case .tunnelProvider(var settings) = everything.protocolConfiguration {
            settings.includeAllNetworks = true
            everything.protocolConfiguration = .tunnelProvider(settings)
        }
        await manager.configurationChanged(everything, removed: false)
        let started = try await manager.start(everything, options: [:], password: nil)
        #expect(started.status == .connected)
        let plan = try #require(applier.activePlans.first)
        #expect(plan.rules.contains { $0.fwmark == FlowSteering.mark(slot: 0) && $0.table == .main })
        #expect(ResolverFileText.values(of: "nameserver", in: resolverFile) == ["10.8.0.1"], "the machine takes the tunnel's DNS")
        await manager.network.drain()
        let member = try #require(applier.currentSteering?.members.first)
        #expect(member.mode == .exclude && member.dnsServers == ["10.0.0.53"], "excluded apps ask the resolver from before the tunnel")
        #expect(member.tunnelAddresses.map(\.description) == ["10.99.0.2/32"])
        let guardRules = try #require(applier.currentGuard)
        #expect(guardRules.ruleset.contains("meta mark & 0x00ff0000 == 0x00800000 accept"))
        #expect(!guardRules.dropsDirectPacket(to: [100, 64, 0, 80], mark: FlowSteering.mark(slot: 0)))
        #expect(guardRules.dropsDirectPacket(to: [100, 64, 0, 80]))
        _ = await manager.stop(everything, reason: .userInitiated)
    }
}
