import Foundation
import NetExt
import NetExtCore
import NetExtIPC
import Testing

/// The NetExt library's manager API against a real netextd.
@Suite("Manager API against netextd", .enabled(if: isRoot, "needs root: starts netextd"))
struct LibraryAPITests {
    @Test("create, save, reload, list; a stale save fails until reloaded; notifications arrive")
    func managers() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()

        let app = try await ControlClient.connect(appIdentifier: "com.example.vpnapp", socketPath: daemon.socket)
        defer { app.close() }
        #expect(app.hello.version == ControlProtocol.version && app.hello.mayModify)
        let notifications = try await app.notifications()

        var manager = TunnelProviderManager(client: app, providerBundleIdentifier: DaemonHarness.testProviderBundle, serverAddress: "vpn.example.test")
        manager.localizedDescription = "App VPN"
        manager.isEnabled = true
        // A rule that never matches here (no cellular interface): netextd must not connect on its
        // own while the test drives the connection (it did, once, between a save and the start).
        manager.onDemandRules = [.connect(interfaceTypeMatch: .cellular)]
        manager.protocolConfiguration?.providerConfiguration = ["requirePassword": .string("pw")]
        try await manager.saveToPreferences(password: "pw")
        #expect(manager.configuration.revision == 1)
        #expect(manager.configuration.owner == Owner(uid: 0, appIdentifier: "com.example.vpnapp"))
        #expect(manager.protocolConfiguration?.passwordReference != nil)

        // Another copy, loaded now, goes stale when the first one saves.
        var other = try #require(try await TunnelProviderManager.loadAllFromPreferences(client: app).first)
        #expect(other.configuration == manager.configuration)
        manager.localizedDescription = "App VPN (renamed)"
        try await manager.saveToPreferences()
        other.isOnDemandEnabled = true
        do {
            try await other.saveToPreferences()
            Issue.record("a save over another client's change must fail")
        } catch {
            #expect(error.code == .configurationStale)
        }
        try await other.loadFromPreferences()
        #expect(other.localizedDescription == "App VPN (renamed)")
        other.isOnDemandEnabled = true
        try await other.saveToPreferences()
        #expect(other.configuration.revision == 3)

        // Root sees every app's configurations (app isolation for other users: AuthorizationTests).
        let otherApp = try await ControlClient.connect(appIdentifier: "com.example.otherapp", socketPath: daemon.socket)
        defer { otherApp.close() }
        #expect(try await TunnelProviderManager.loadAllFromPreferences(client: otherApp).count == 1)

        // Connection control and status through the library; the stored password reaches the provider.
        let updates = try await manager.connection.statusUpdates()
        try await manager.connection.startVPNTunnel()
        #expect(try await manager.connection.status == .connected)
        try await manager.connection.stopVPNTunnel()
        #expect(try await manager.connection.status == .disconnected)
        let seen = await Self.first(4, of: updates.map(\.status))
        #expect(seen == [.connecting, .connected, .disconnecting, .disconnected])

        // The configuration-changed notifications of the three saves came on the first stream.
        let revisions = await Self.first(3, of: notifications.compactMap { notification -> Int? in
            if case .configurationChanged(let change) = notification { return change.configuration?.revision }
            return nil
        })
        #expect(revisions == [1, 2, 3])

        try await manager.removeFromPreferences()
        #expect(try await TunnelProviderManager.loadAllFromPreferences(client: app).isEmpty)
    }

    /// The first `count` elements of `sequence`, or fewer if `limit` passes first (bounded: a
    /// missing notification fails the expectation instead of hanging the run).
    static func first<Element: Sendable>(_ count: Int, of sequence: some AsyncSequence<Element, Never> & Sendable, limit: Duration = .seconds(20)) async -> [Element] {
        let collector = Task {
            var elements: [Element] = []
            for await element in sequence {
                elements.append(element)
                if elements.count == count { break }
            }
            return elements
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            collector.cancel()
        }
        defer { timer.cancel() }
        return await collector.value
    }

    @Test("the personal VPN manager holds one configuration per app")
    func personalVPN() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let app = try await ControlClient.connect(appIdentifier: "com.example.personal", socketPath: daemon.socket)
        defer { app.close() }
        var manager = try await VPNManager.shared(client: app, defaultServerAddress: "ike.example.test")
        manager.localizedDescription = "My VPN"
        manager.protocolConfiguration?.authenticationMethod = .sharedSecret
        try await manager.saveToPreferences(password: "p", sharedSecret: "s")
        let reloaded = try await VPNManager.shared(client: app)
        #expect(reloaded.configuration == manager.configuration)
        // A second personal configuration for the same app is refused.
        let second = NetExtCore.Configuration(owner: manager.configuration.owner, localizedDescription: "Second", protocolConfiguration: .personalVPN(IKEv2Protocol(serverAddress: "x.test")))
        do {
            _ = try await app.call(SaveConfiguration(configuration: second))
            Issue.record("a second personal VPN must be refused")
        } catch {
            #expect(error.code == .configurationInvalid)
        }
    }

    @Test("the README's example program runs against a real netextd")
    func readmeExample() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let result = try await run(binaryDirectory + "/netext-example-manager", [], environment: daemon.environment)
        #expect(result.status == 0, "\(result)")
        // Its configuration connects on demand on any network, so netextd may already be
        // connecting it when the example reads the status back (CI saw `connecting` once).
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.count == 4 && lines[0] == "saved Example VPN at revision 1" && lines[2] == "removed Example VPN" && lines[3].isEmpty, "\(result)")
        let statusLine = "Example VPN: enabled=true on-demand rules=1 status="
        #expect(lines.count > 1 && lines[1].hasPrefix(statusLine)
                && ["disconnected", "connecting", "connected"].contains(String(lines[1].dropFirst(statusLine.count))), "\(result)")
    }
}
