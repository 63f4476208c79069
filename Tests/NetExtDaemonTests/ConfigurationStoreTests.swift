import Foundation
import GRDB
import NetExtCore
import NetExtIPC
import Testing
@testable import NetExtDaemon

func tunnelConfiguration(_ name: String, owner: Owner = Owner(uid: 0, appIdentifier: "app.a"), enabled: Bool = false) -> NetExtCore.Configuration {
    NetExtCore.Configuration(owner: owner, localizedDescription: name, isEnabled: enabled,
        protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(providerBundleIdentifier: "com.example.t", serverAddress: "vpn.example.test")))
}

func personalConfiguration(_ name: String, owner: Owner) -> NetExtCore.Configuration {
    NetExtCore.Configuration(owner: owner, localizedDescription: name, protocolConfiguration: .personalVPN(IKEv2Protocol(serverAddress: "ike.example.test")))
}

@Suite("Configuration store rules")
struct ConfigurationStoreTests {
    @Test("a new configuration is saved at revision 1 and reads back equal")
    func saveAndRead() throws {
        let store = try ConfigurationStore()
        #expect(try store.configurationCount() == 0)
        let saved = try store.save(tunnelConfiguration("A")).saved
        #expect(saved.revision == 1)
        #expect(try store.configuration(id: saved.id) == saved)
        #expect(try store.allConfigurations() == [saved])
        #expect(try store.configurationCount() == 1)
    }

    @Test("saving over someone else's change is stale until reloaded")
    func staleSave() throws {
        let store = try ConfigurationStore()
        let loaded = try store.save(tunnelConfiguration("A")).saved
        var first = loaded
        first.localizedDescription = "A1"
        _ = try store.save(first)
        var second = loaded
        second.localizedDescription = "A2"
        let error = #expect(throws: NetExtError.self) { try store.save(second) }
        #expect(error?.code == .configurationStale)
        #expect(error?.message.contains("stored revision 2, yours 1") == true)
        var reloaded = try #require(try store.configuration(id: loaded.id))
        reloaded.localizedDescription = "A2"
        #expect(try store.save(reloaded).saved.revision == 3)
    }

    @Test("saving a removed configuration is stale; a new one with a revision is stale too")
    func staleAfterRemove() throws {
        let store = try ConfigurationStore()
        let saved = try store.save(tunnelConfiguration("A")).saved
        _ = try store.remove(id: saved.id)
        let error = #expect(throws: NetExtError.self) { try store.save(saved) }
        #expect(error?.code == .configurationStale)
    }

    @Test("each app has at most one personal VPN; other apps have their own")
    func onePersonalVPNPerApp() throws {
        let store = try ConfigurationStore()
        let appA = Owner(uid: 1000, appIdentifier: "app.a")
        _ = try store.save(personalConfiguration("A's VPN", owner: appA))
        _ = try store.save(personalConfiguration("B's VPN", owner: Owner(uid: 1000, appIdentifier: "app.b")))
        _ = try store.save(personalConfiguration("A's VPN as another user", owner: Owner(uid: 1001, appIdentifier: "app.a")))
        let error = #expect(throws: NetExtError.self) { try store.save(personalConfiguration("A's second", owner: appA)) }
        #expect(error?.code == .configurationInvalid)
        #expect(error?.message.contains("already has a personal VPN configuration ('A's VPN')") == true)
    }

    @Test("enabling one enterprise VPN disables the others, in one transaction")
    func oneEnabledEnterpriseVPN() throws {
        let store = try ConfigurationStore()
        let first = try store.save(tunnelConfiguration("First", enabled: true)).saved
        let outcome = try store.save(tunnelConfiguration("Second", owner: Owner(uid: 5, appIdentifier: "other"), enabled: true))
        #expect(outcome.disabled.map(\.id) == [first.id])
        #expect(outcome.disabled.first?.revision == 2)
        let enabled = try store.allConfigurations().filter(\.isEnabled)
        #expect(enabled.map(\.localizedDescription) == ["Second"])
        // A personal VPN stays enabled alongside.
        var personal = personalConfiguration("Personal", owner: Owner(uid: 0, appIdentifier: "p"))
        personal.isEnabled = true
        _ = try store.save(personal)
        #expect(try store.allConfigurations().filter(\.isEnabled).count == 2)
    }

    @Test("the database itself refuses a second enabled enterprise VPN")
    func databaseConstraint() throws {
        let store = try ConfigurationStore()
        let first = try store.save(tunnelConfiguration("First", enabled: true)).saved
        var second = tunnelConfiguration("Second", enabled: true)
        second.revision = 1
        #expect(throws: (any Error).self) {
            try store.database.write { db in try ConfigurationStore.upsert(second, in: db, now: Date()) }
        }
        #expect(try store.configuration(id: first.id)?.isEnabled == true)
    }

    @Test("profiles install as a unit, reinstall replaces, removal takes their configurations")
    func profiles() throws {
        let store = try ConfigurationStore()
        let owner = Owner(uid: 0, appIdentifier: "cli")
        let a = tunnelConfiguration("P-A", owner: owner, enabled: true)
        let b = personalConfiguration("P-B", owner: owner)
        let profile = ConfigurationProfile(identifier: "com.example.p", uuid: nil, displayName: "P", organization: nil, configurations: [], skippedPayloads: [SkippedPayload(payloadType: "x", payloadIdentifier: "y", reason: "z")])
        let installed = try store.install(profile: profile, configurations: [a, b], owner: owner)
        #expect(installed.saved.count == 2 && installed.removed.isEmpty)
        #expect(try store.profiles().first?.configurationIDs.count == 2)
        #expect(try store.profiles().first?.skippedPayloads.count == 1)
        // Reinstall without b: a is replaced (revision 2), b removed.
        let again = try store.install(profile: profile, configurations: [a], owner: owner)
        #expect(again.saved.first?.saved.revision == 2)
        #expect(again.removed.map(\.id) == [b.id])
        let removed = try store.removeProfile(identifier: "com.example.p")
        #expect(removed.map(\.id) == [a.id])
        #expect(try store.allConfigurations().isEmpty)
        #expect(try store.profiles().isEmpty)
        #expect(throws: NetExtError.self) { try store.removeProfile(identifier: "com.example.p") }
    }

    @Test("a damaged database file is refused with its path, and left as it was")
    func corruptFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netext-store-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("netext.sqlite").path
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try garbage.write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: NetExtError.self) { try ConfigurationStore(path: path) }
        #expect(error?.code == .configurationReadWriteFailed)
        #expect(error?.message.contains(path) == true)
        #expect(FileManager.default.contents(atPath: path) == garbage)
    }

    @Test("a store on disk keeps its configurations across reopening")
    func persistence() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netext-store-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("netext.sqlite").path
        let saved = try ConfigurationStore(path: path).save(tunnelConfiguration("Kept")).saved
        #expect(try ConfigurationStore(path: path).configuration(id: saved.id) == saved)
    }
}
