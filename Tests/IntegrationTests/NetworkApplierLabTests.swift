import Foundation
import NetExtCore
import NetExtDaemon
import NetExtLinux
import NetExtTestSupport
import Testing

/// The real `ip` applier in a namespace of the test's own (a veth interface stands in for the
/// TUN device): settings applied again change only what differs, and a route both plans share is
/// never deleted, not even for a moment (`ip monitor` sees every deletion).
@Suite("ip applier in a namespace", .enabled(if: isRoot, "needs root: creates a network namespace"), .serialized)
struct NetworkApplierLabTests {
    let namespace = "nxplan\(UInt32.random(in: 0..<1_000_000))"
    let ip = CommandRunner.ipPath

    func plan(routes: [String], server: String, address: String = "10.99.0.2") throws -> NetworkPlan {
        let settings = PacketTunnelNetworkSettings(
            tunnelRemoteAddress: server,
            ipv4Settings: IPv4Settings(addresses: [address], subnetMasks: ["255.255.255.255"],
                includedRoutes: routes.map { IPv4Route(destinationAddress: $0, subnetMask: "255.255.0.0") }))
        return try NetworkPlan.make(settings: settings, interface: "netext0", table: 7100, rulePriority: 7100, underlyingMTU: 1500)
    }

    /// Waits until `path` contains `text`, running `step` before each look: at least 30 s and
    /// at least 100 looks (a starved task pool can sleep through the whole 30 s at once).
    func waitForFile(_ path: String, containing text: String, while step: @Sendable () -> Void) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        var looks = 0
        while ContinuousClock.now < deadline || looks < 100 {
            step()
            looks += 1
            if let content = try? String(contentsOfFile: path, encoding: .utf8), content.contains(text) { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    func inNamespace(_ arguments: [String]) -> String {
        CommandRunner.run(ip, ["-n", namespace] + arguments).output
    }

    @Test("settings applied again: the shared route stays, the gone route and rule go, the new ones come; a refused change puts the previous plan back")
    func changeInPlace() async throws {
        let wrapper = NSTemporaryDirectory() + "\(namespace)-ip"
        try "#!/bin/sh\nexec \(ip) -n \(namespace) \"$@\"\n".write(toFile: wrapper, atomically: true, encoding: .utf8)
        chmod(wrapper, 0o755)
        _ = CommandRunner.run(ip, ["netns", "add", namespace])
        defer {
            _ = CommandRunner.run(ip, ["netns", "del", namespace])
            try? FileManager.default.removeItem(atPath: wrapper)
        }
        #expect(CommandRunner.run(ip, ["-n", namespace, "link", "add", "netext0", "type", "veth", "peer", "name", "nxpeer"]).status == 0)
        let applier = IPCommandApplier(executable: wrapper)
        let before = try plan(routes: ["10.20.0.0", "10.21.0.0"], server: "192.0.2.1")
        try applier.apply(before)
        #expect(inNamespace(["-4", "route", "show", "table", "7100"]).contains("10.20.0.0/16"))

        // Watch every change while the new plan replaces the old one. The monitor writes to a
        // file; a marker route before the change and another after show it was listening
        // and has written everything (no timing guess: the test pool may be starved under load).
        let log = NSTemporaryDirectory() + "\(namespace)-monitor.log", pidFile = NSTemporaryDirectory() + "\(namespace)-monitor.pid"
        defer { for file in [log, pidFile] { try? FileManager.default.removeItem(atPath: file) } }
        // Started in the background by a shell that returns at once: nothing here waits on the
        // test's task pool, which a loaded CI machine starves for tens of seconds.
        let script = "\(ip) -n \(namespace) monitor route rule address > \(log) 2>/dev/null </dev/null & echo $! > \(pidFile)"
        #expect(CommandRunner.run("/bin/sh", ["-c", script]).status == 0)
        let monitorPID = Int32((try? String(contentsOfFile: pidFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        defer { if monitorPID > 0 { kill(monitorPID, SIGKILL) } }
        func marker(_ action: String, _ prefix: String) -> @Sendable () -> Void {
            let arguments = ["-n", namespace, "-4", "route", action, prefix, "dev", "netext0", "table", "7199"], ip = self.ip
            return { _ = CommandRunner.run(ip, arguments) }
        }
        let addMarker = marker("add", "10.250.0.0/16"), removeMarker = marker("del", "10.250.0.0/16")
        #expect(try await waitForFile(log, containing: "10.250.0.0/16", while: { removeMarker(); addMarker() }))
        let after = try plan(routes: ["10.21.0.0", "10.22.0.0"], server: "192.0.2.9", address: "10.99.0.3")
        try applier.apply(after, replacing: before)
        marker("add", "10.251.0.0/16")()
        #expect(try await waitForFile(log, containing: "10.251.0.0/16", while: {}))
        let seen = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let deletions = seen.split(separator: "\n").filter { $0.hasPrefix("Deleted") }
        #expect(!deletions.contains { $0.contains("10.21.0.0/16") }, "the shared route was never deleted: \(deletions)")
        #expect(deletions.contains { $0.contains("10.20.0.0/16") })

        let routes = inNamespace(["-4", "route", "show", "table", "7100"])
        #expect(routes.contains("10.21.0.0/16") && routes.contains("10.22.0.0/16") && !routes.contains("10.20.0.0/16"), "\(routes)")
        let rules = inNamespace(["-4", "rule", "show"])
        #expect(rules.contains("192.0.2.9") && !rules.contains("192.0.2.1 "), "\(rules)")
        let addresses = inNamespace(["-4", "address", "show", "dev", "netext0"])
        #expect(addresses.contains("10.99.0.3/32") && !addresses.contains("10.99.0.2/32"), "\(addresses)")

        // A change `ip` refuses is undone, and the plan before it is in force again, whole: the
        // rule it would delete was removed behind netextd's back, so `ip rule del` fails after
        // the new route and rule were added.
        #expect(CommandRunner.run(ip, ["-n", namespace, "-4", "rule", "del", "priority", "7100", "to", "192.0.2.9/32", "lookup", "main"]).status == 0)
        let refused = try plan(routes: ["10.21.0.0", "10.23.0.0"], server: "192.0.2.10", address: "10.99.0.3")
        #expect {
            try applier.apply(refused, replacing: after)
        } throws: { error in
            (error as? NetExtError)?.message.contains("rule del priority 7100 to 192.0.2.9/32") == true
        }
        let restored = inNamespace(["-4", "route", "show", "table", "7100"])
        #expect(restored.contains("10.22.0.0/16") && !restored.contains("10.23.0.0/16"), "\(restored)")
        let restoredRules = inNamespace(["-4", "rule", "show"])
        #expect(restoredRules.contains("192.0.2.9") && !restoredRules.contains("192.0.2.10"), "\(restoredRules)")
        applier.teardown(after)
        #expect(inNamespace(["-4", "route", "show", "table", "7100"]).isEmpty)
    }
}
