import Foundation
import Testing

/// The real netextd driven by the real netext CLI.
@Suite("netextd + netext CLI", .enabled(if: isRoot, "needs root: starts netextd and providers as other users"))
struct CLILifecycleTests {
    @Test("create, list, show, enable, start, watch, stop, disable, remove")
    func lifecycle() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()

        let empty = try await daemon.cli(["list"])
        #expect(empty.status == 0)
        #expect(empty.stdout.contains("No configurations"))

        let created = try await daemon.cli(["create", "--name", "Office VPN", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.office.test", "--config", "mode=test"])
        #expect(created.status == 0, "\(created)")

        let listed = try await daemon.cli(["list", "--json"])
        let items = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(items.count == 1)
        let configuration = try #require(items.first?["configuration"] as? [String: Any])
        #expect(configuration["localizedDescription"] as? String == "Office VPN")
        #expect(configuration["isEnabled"] as? Bool == false)
        #expect(items.first?["status"] as? String == "invalid")

        // Starting a disabled configuration is refused with configurationDisabled (exit 4).
        let disabledStart = try await daemon.cli(["start", "Office VPN"])
        #expect(disabledStart.status == 4, "\(disabledStart)")
        #expect(disabledStart.stderr.contains("not enabled"))

        // A watcher sees every change from now on.
        let watchOutput = daemon.root + "/watch.out"
        let watcher = Process()
        let (wrapper, wrapped) = unblockingSignals(binaryDirectory + "/netext", ["status", "--watch", "--count", "6", "--timeout", "60"])
        watcher.executableURL = URL(fileURLWithPath: wrapper)
        watcher.arguments = wrapped
        watcher.environment = ProcessInfo.processInfo.environment.merging(daemon.environment) { $1 }
        _ = FileManager.default.createFile(atPath: watchOutput, contents: nil)
        watcher.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: watchOutput))
        let watcherErrors = Pipe()
        watcher.standardError = watcherErrors
        try watcher.run()
        defer { if watcher.isRunning { watcher.terminate() } }
        // Wait until the watcher has subscribed (it says so on stderr).
        let announced = String(decoding: watcherErrors.fileHandleForReading.availableData, as: UTF8.self)
        #expect(announced.contains("watching for changes"))

        #expect(try await daemon.cli(["enable", "Office VPN"]).status == 0)
        let started = try await daemon.cli(["start", "Office VPN"])
        #expect(started.status == 0, "\(started)\n\(daemon.log())")
        #expect(started.stdout.contains("Office VPN: connected"))
        let shown = try await daemon.cli(["show", "Office VPN"])
        #expect(shown.stdout.contains("status:      connected"))
        #expect(shown.stdout.contains("connected:   since"))
        let stopped = try await daemon.cli(["stop", "Office VPN"])
        #expect(stopped.status == 0 && stopped.stdout.contains("disconnected"), "\(stopped)")
        #expect(try await daemon.cli(["disable", "Office VPN"]).status == 0)

        _ = await waitUntil(timeout: 30) { !watcher.isRunning }
        let events = try String(contentsOfFile: watchOutput, encoding: .utf8).split(separator: "\n").map(String.init)
        // The current status first, then exactly the six changes.
        #expect(events.count == 7, "\(events)")
        #expect(events.first == "Office VPN: disabled", "human output says disabled where Apple's status is invalid")
        let expected = [
            "configuration saved: Office VPN (revision 2, enabled)",
            "status Office VPN: disconnected -> connecting",
            "status Office VPN: connecting -> connected",
            "status Office VPN: connected -> disconnecting",
            "status Office VPN: disconnecting -> disconnected",
            "configuration saved: Office VPN (revision 3, disabled)",
        ]
        for line in expected {
            #expect(events.contains { $0.hasSuffix(line) }, "missing event '\(line)' in \(events)")
        }

        // The provider ran as nobody, not as root.
        #expect(daemon.log().contains("startTunnel server=vpn.office.test uid=65534"), "\(daemon.log())")

        let removed = try await daemon.cli(["remove", "Office VPN"])
        #expect(removed.status == 0)
        #expect(try await daemon.cli(["show", "Office VPN"]).status == 8, "an unknown configuration exits 8")
        #expect(await daemon.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket is removed on shutdown")
    }

    /// The reader of standard output has gone before netext writes (`netext status | head -1`):
    /// every printing command ends quietly with status 0, never with a signal.
    @Test("a closed standard output ends the CLI quietly, whatever it prints")
    func closedPipe() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        for index in 1...3 {
            #expect(try await daemon.cli(["create", "--name", "VPN \(index)", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test"]).status == 0)
        }
        let netext = binaryDirectory + "/netext"
        for command in ["status", "status --json", "list", "list --json", "show 'VPN 1'", "status --watch --count 1 --timeout 2", "providers"] {
            // `exec 1>&-`-style: the pipe's reader exits at once, so every write meets EPIPE.
            let result = try await run("/bin/bash", ["-c", "\(netext) \(command) | true; echo \"exit=${PIPESTATUS[0]}\""], environment: daemon.environment)
            #expect(result.stdout.contains("exit=0"), "\(command): \(result)")
        }
    }

    @Test("the CLI says when netextd is not running, and how to start it")
    func daemonNotRunning() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        let result = try await daemon.cli(["list"])
        #expect(result.status == 69)
        #expect(result.stderr.contains("netextd is not running"))
        #expect(result.stderr.contains("start it with `netextd`"))
    }

    @Test("a second netextd refuses to take over a live socket")
    func secondDaemon() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let second = try await run(binaryDirectory + "/netextd", [], environment: daemon.environment.merging(["NETEXT_STATE_DIR": daemon.root + "/state2"]) { $1 }, timeout: 20)
        #expect(second.status == 1)
        #expect(second.stderr.contains("another netextd is already listening on \(daemon.socket)"))
        #expect(try await daemon.cli(["list"]).status == 0, "the first daemon keeps serving")
    }

    @Test("a damaged database stops netextd with a message naming the file, and is kept")
    func corruptDatabase() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try FileManager.default.createDirectory(atPath: daemon.stateDirectory, withIntermediateDirectories: true)
        let path = daemon.stateDirectory + "/netext.sqlite"
        let garbage = Data(repeating: 0x5A, count: 4096)
        try garbage.write(to: URL(fileURLWithPath: path))
        let result = try await run(binaryDirectory + "/netextd", [], environment: daemon.environment, timeout: 20)
        #expect(result.status == 1)
        #expect(result.stderr.contains("the configuration database \(path)"), "\(result)")
        #expect(FileManager.default.contents(atPath: path) == garbage, "never wiped")
    }
}
