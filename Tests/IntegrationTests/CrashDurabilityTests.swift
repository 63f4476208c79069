import Foundation
import GRDB
import NetExt
import NetExtCore
import NetExtDaemon
import NetExtIPC
import Synchronization
import Testing

/// kill -9 of netextd at random moments while clients write: the store always holds either the
/// old or the new version of each configuration, every acknowledged write survives, and the
/// daemon starts again on the same state.
@Suite("Crash safety of the store", .enabled(if: isRoot, "needs root: starts netextd"))
struct CrashDurabilityTests {
    @Test("kill -9 during writes, 12 times")
    func killNineLoop() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let setup = try await ControlClient.connect(appIdentifier: "com.example.crash", socketPath: daemon.socket)
        var ids: [UUID] = []
        for index in 0..<3 {
            var manager = TunnelProviderManager(client: setup, providerBundleIdentifier: DaemonHarness.testProviderBundle, serverAddress: "vpn\(index).test")
            manager.localizedDescription = "crash-\(index)-0"
            try await manager.saveToPreferences(password: "secret-\(index)")
            ids.append(manager.id)
        }
        setup.close()

        var generator = SystemRandomNumberGenerator()
        var totalAcknowledged = 0
        for round in 0..<12 {
            if round > 0 { try await daemon.start() }
            let acknowledged = Mutex<[UUID: Int]>([:])
            let client = try await ControlClient.connect(appIdentifier: "com.example.crash", socketPath: daemon.socket)
            let writer = Task {
                var step = 0
                while !Task.isCancelled && step < 100_000 {
                    step += 1
                    let id = ids[step % ids.count]
                    do {
                        var configuration = try await client.call(LoadConfiguration(.id(id))).configuration
                        configuration.localizedDescription = "crash-\(step % ids.count)-\(configuration.revision + 1)"
                        configuration.isEnabled.toggle()
                        let saved = try await client.call(SaveConfiguration(configuration: configuration, password: step % 5 == 0 ? "rotated-\(step)" : nil)).configuration
                        acknowledged.withLock { $0[id] = saved.revision }
                    } catch {
                        return
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 150...600, using: &generator)))
            daemon.crash()
            _ = await writer.value
            client.close()
            let acked = acknowledged.withLock { $0 }
            totalAcknowledged += acked.count

            // The file is a healthy database whose rows agree with their JSON bodies.
            let path = daemon.stateDirectory + "/netext.sqlite"
            let queue = try DatabaseQueue(path: path)
            let integrity = try await queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            #expect(integrity == ["ok"], "round \(round)")
            let rows = try queue.read { db in try Row.fetchAll(db, sql: "SELECT id, name, revision, isEnabled, body FROM configuration") }
            try queue.close()
            #expect(rows.count == 3)
            for row in rows {
                let body: String = row["body"]
                let configuration = try JSONDecoder().decode(NetExtCore.Configuration.self, from: Data(body.utf8))
                #expect(configuration.revision == row["revision"] as Int)
                #expect(configuration.localizedDescription == row["name"] as String)
                #expect(configuration.isEnabled == row["isEnabled"] as Bool)
                // Every acknowledged save is on disk. (Later revisions can exist: the save in
                // flight, and enabling one VPN bumps the others it disables.)
                if let ackedRevision = acked[configuration.id] {
                    #expect(configuration.revision >= ackedRevision, "round \(round): stored \(configuration.revision), acknowledged \(ackedRevision)")
                }
            }
            // Only one enterprise VPN is ever enabled, whatever moment the crash hit.
            #expect(rows.filter { $0["isEnabled"] as Bool }.count <= 1)
        }
        #expect(totalAcknowledged > 0, "the writers made progress")

        // The daemon starts on the crashed state, keeps every configuration, and each stored
        // password is still there (orphaned secrets from interrupted saves are collected).
        try await daemon.start()
        let list = try await daemon.cli(["list", "--json"])
        let items = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(items.count == 3)
        let secrets = try FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory + "/secrets")
        #expect(secrets.count == 3, "one password per configuration, no orphans: \(secrets)")
    }
}
