import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Providers that fail, crash, hang, or outlive netextd.
@Suite("Provider launch, failure and shutdown", .enabled(if: isRoot, "needs root: starts providers as nobody"))
struct ProviderLifecycleTests {
    func createEnabled(_ daemon: DaemonHarness, _ name: String, config: [String] = []) async throws {
        let result = try await daemon.cli(["create", "--name", name, "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test", "--enable"] + config.flatMap { ["--config", $0] })
        #expect(result.status == 0, "\(result)")
    }

    /// The pid of the most recently started provider, from netextd's log.
    func lastProviderPID(_ daemon: DaemonHarness) -> Int32? {
        let lines = daemon.log().split(separator: "\n").filter { $0.contains("provider started") }
        guard let line = lines.last, let range = line.range(of: "pid=") else { return nil }
        return Int32(line[range.upperBound...].prefix { $0.isNumber })
    }

    func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    @Test("startTunnel throwing fails the start with the provider's message")
    func failingStart() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        try await createEnabled(daemon, "Broken", config: ["failStart=no route to the VPN server"])
        let result = try await daemon.cli(["start", "Broken"])
        #expect(result.status == 5, "\(result)")
        #expect(result.stderr.contains("no route to the VPN server"))
        let status = try await daemon.cli(["status", "Broken"])
        #expect(status.stdout.contains("Broken: disconnected (last error: no route to the VPN server)"), "\(status)")
    }

    @Test("an app's message reaches the running provider's handleAppMessage and its answer comes back")
    func appMessages() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        try await createEnabled(daemon, "Chatty")
        let early = try await daemon.cli(["message", "Chatty", "hello"])
        #expect(early.status != 0 && early.stderr.contains("is not running"), "\(early)")
        #expect(try await daemon.cli(["start", "Chatty"]).status == 0)
        let answered = try await daemon.cli(["message", "Chatty", "hello provider"])
        #expect(answered.status == 0 && answered.stdout == "echo: hello provider\n", "\(answered)")
        let fromInput = try await daemon.cli(["message", "Chatty"], stdin: "from standard input")
        #expect(fromInput.stdout == "echo: from standard input\n", "\(fromInput)")
        let silent = try await daemon.cli(["message", "Chatty", "silence"])
        #expect(silent.status == 0 && silent.stdout.isEmpty && silent.stderr.contains("no answer"), "\(silent)")
        let json = try await daemon.cli(["message", "Chatty", "x", "--json"])
        #expect(json.stdout.contains(Data("echo: x".utf8).base64EncodedString()), "\(json)")
        #expect(daemon.log().contains("handleAppMessage"))
    }

    @Test("a provider that crashes is reported, and the connection ends disconnected")
    func crashingProvider() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        try await createEnabled(daemon, "Crashy", config: ["crashAfterStart=yes"])
        #expect(try await daemon.cli(["start", "Crashy"]).status == 0)
        let reported = try await waitUntil(timeout: 15) {
            try await daemon.cli(["status", "Crashy"]).stdout.contains("Crashy: disconnected (last error: the provider exited with status 3)")
        }
        let final = try await daemon.cli(["status", "Crashy"])
        #expect(reported, "\(final)\n\(daemon.log())")
    }

    @Test("a provider that ignores stop is terminated after the stop deadline")
    func hangingStop() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        try await createEnabled(daemon, "Stubborn", config: ["ignoreStop=yes"])
        #expect(try await daemon.cli(["start", "Stubborn"]).status == 0)
        let pid = try #require(lastProviderPID(daemon))
        let began = Date()
        let stopped = try await daemon.cli(["stop", "Stubborn"], timeout: 30)
        #expect(stopped.status == 0 && stopped.stdout.contains("Stubborn: disconnected"), "\(stopped)")
        #expect(Date().timeIntervalSince(began) < 15)
        #expect(await waitUntil(timeout: 10) { !processExists(pid) }, "the provider process is gone")
        #expect(daemon.log().contains("provider did not acknowledge stop; terminating"))
    }

    @Test("a provider slower than the start deadline fails with timedOut (exit 75)")
    func slowStart() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start(extraArguments: ["--provider-start-timeout", "1"])
        try await createEnabled(daemon, "Slow", config: ["startDelay=20"])
        let result = try await daemon.cli(["start", "Slow"], timeout: 30)
        #expect(result.status == 75, "\(result)")
        #expect(result.stderr.contains("did not finish starting"))
        let pid = try #require(lastProviderPID(daemon))
        #expect(await waitUntil(timeout: 10) { !processExists(pid) })
    }

    @Test("an unregistered provider is refused at create --enable and at enable, naming it and the registered ones; a start names it too")
    func unknownProvider() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let enabled = try await daemon.cli(["create", "--name", "Nobody's", "--provider", "com.example.missing", "--server", "vpn.test", "--enable"])
        #expect(enabled.status == 9, "\(enabled)")
        #expect(enabled.stderr.contains("no provider is registered for bundle identifier 'com.example.missing'"), "\(enabled)")
        #expect(enabled.stderr.contains("registered for packet-tunnel: ") && enabled.stderr.contains(DaemonHarness.testProviderBundle), "\(enabled)")
        #expect(try await daemon.cli(["list"]).stdout.contains("No configurations"), "nothing was saved")
        // Saved disabled, it may wait for its provider; enabling it is refused the same way.
        #expect(try await daemon.cli(["create", "--name", "Nobody's", "--provider", "com.example.missing", "--server", "vpn.test"]).status == 0)
        let enable = try await daemon.cli(["enable", "Nobody's"])
        #expect(enable.status == 9 && enable.stderr.contains("'com.example.missing'"), "\(enable)")
        let result = try await daemon.cli(["start", "Nobody's"])
        #expect(result.status != 0, "\(result)")
    }

    @Test("enabling an enterprise VPN says which one it disabled; a duplicate name is refused unless allowed")
    func enableSaysWhatItDisabledAndNamesStayUnique() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        #expect(try await daemon.cli(["create", "--name", "First", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test", "--enable"]).status == 0)
        let second = try await daemon.cli(["create", "--name", "Second", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test", "--enable"])
        #expect(second.status == 0, "\(second)")
        #expect(second.stdout.contains("disabled First ("), "\(second)")
        let back = try await daemon.cli(["enable", "First"])
        #expect(back.stdout.contains("enabled First") && back.stdout.contains("disabled Second ("), "\(back)")
        let twin = try await daemon.cli(["create", "--name", "first", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test"])
        #expect(twin.status != 0 && twin.stderr.contains("a configuration named 'First' already exists"), "\(twin)")
        #expect(try await daemon.cli(["create", "--name", "first", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test", "--allow-duplicate-name"]).status == 0)
    }

    @Test("disabling a connected configuration stops its provider")
    func disableStops() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        try await createEnabled(daemon, "Tunnel")
        #expect(try await daemon.cli(["start", "Tunnel"]).status == 0)
        #expect(try await daemon.cli(["disable", "Tunnel"]).status == 0)
        #expect(daemon.log().contains("stopTunnel reason=configurationDisabled"), "\(daemon.log())")
        #expect(try await daemon.cli(["status", "Tunnel"]).stdout.contains("Tunnel: disabled"))
    }

    @Test("a configuration name with a newline cannot forge a line in netextd's log")
    func logInjection() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let name = "Office\n2026-11-24T00:00:00 critical netextd: forged"
        try await createEnabled(daemon, name)
        #expect(try await daemon.cli(["start", name]).status == 0)
        #expect(try await daemon.cli(["stop", name]).status == 0)
        let log = daemon.log()
        #expect(log.contains("Office\\n2026-11-24T00:00:00 critical netextd: forged"), "\(log)")
        #expect(!log.split(separator: "\n").contains { $0.hasPrefix("2026-11-24T00:00:00 critical") }, "\(log)")
    }

    @Test("SIGTERM stops every connection before netextd exits; kill -9 leaves no provider behind")
    func shutdown() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        try await createEnabled(daemon, "Tunnel")
        #expect(try await daemon.cli(["start", "Tunnel"]).status == 0)
        let first = try #require(lastProviderPID(daemon))
        #expect(await daemon.stop() == 0)
        #expect(daemon.log().contains("stopTunnel reason=daemonShutdown"))
        #expect(await waitUntil(timeout: 10) { !processExists(first) })

        try await daemon.start()
        #expect(try await daemon.cli(["start", "Tunnel"]).status == 0)
        let second = try #require(lastProviderPID(daemon))
        #expect(second != first)
        daemon.crash()
        #expect(await waitUntil(timeout: 10) { !processExists(second) }, "a provider exits when netextd's socket closes")
    }
}
