import Foundation
import NetExtTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 26, item 2, scaled down for CI: what an unprivileged local user can do to netextd
/// through its control socket (scripts/lib/control-flood.py, run as `nobody`), while root
/// goes on being answered. `scripts/attack` runs the full-size versions.
@Suite("netextd under a local flood", .enabled(if: isRoot, "needs root: starts netextd, switches to nobody"))
struct ControlLimitsTests {
    static let flood = repositoryRoot + "/scripts/lib/control-flood.py"

    func flood(_ daemon: DaemonHarness, _ mode: String, count: Int, hold: Double = 0, wait: Double = 8) async throws -> [String: Int] {
        let result = try await run(
            "/usr/bin/python3", [Self.flood, mode, "--socket", daemon.socket, "--count", "\(count)", "--hold", "\(hold)", "--wait", "\(wait)"],
            as: .nobody, timeout: 120)
        #expect(result.status == 0, "\(result)")
        var values: [String: Int] = [:]
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Int(parts[1]) { values[String(parts[0])] = value }
        }
        return values
    }

    static func residentMegabytes(_ pid: Int32) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Double(line.split(separator: " ").dropFirst().first ?? "0").map { $0 / 1024 } ?? 0
    }

    /// Root's `netext status`, timed.
    static func timedStatus(_ daemon: DaemonHarness) async throws -> (result: CommandResult, seconds: Double) {
        let began = Date()
        let result = try await daemon.cli(["status"], timeout: 30)
        return (result, Date().timeIntervalSince(began))
    }

    @Test("pipelined requests whose answers are never read: netextd stops reading, stays small, and root is answered at once")
    func pipelinedFlood() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let pid = try #require(daemon.pid)
        let before = Self.residentMegabytes(pid)
        // The flood lasts 12 s; root's status, asked 3 s in, must come before its end (8 s
        // leaves room for a starved machine starting the CLI: 5.006 s was seen with a build
        // running beside the suite).
        async let flooding = flood(daemon, "pipeline", count: 30_000, hold: 12)
        try await Task.sleep(for: .seconds(3))
        let (status, seconds) = try await Self.timedStatus(daemon)
        let during = Self.residentMegabytes(pid)
        let figures = try await flooding
        #expect(status.status == 0, "\(status)")
        #expect(seconds < 8.0, "root's status took \(seconds) s during the flood")
        #expect(during - before < 60, "netextd grew from \(before) to \(during) MB")
        // Backpressure: the flooder could not even hand all its requests over.
        #expect((figures["pipeline_sent"] ?? 0) < 30_000, "\(figures)")
    }

    @Test("a silent connection is closed after the hello deadline; a big first frame at once")
    func helloDeadline() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let silent = try await flood(daemon, "silent", count: 10, wait: 8)
        #expect(silent["silent_opened"] == 10 && silent["silent_closed_by_netextd"] == 10, "\(silent)")
        let big = try await flood(daemon, "big-hello", count: 1, wait: 2)
        #expect(big["big_hello_closed"] == 1, "\(big)")
    }

    @Test("one user holds at most 16 connections and partial 4 MiB frames are refused; root still connects")
    func connectionCapAndPartialFrames() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let pid = try #require(daemon.pid)
        // The holders keep their 16 connections for 12 s; root's status, asked 2 s in, must not
        // wait for them (it would take 10 s or more). The 5 s bound leaves room for a starved
        // CI machine starting the CLI; it answers in milliseconds on an idle one.
        async let holding = flood(daemon, "hold", count: 40, hold: 12)
        try await Task.sleep(for: .seconds(2))
        let (status, seconds) = try await Self.timedStatus(daemon)
        let held = try await holding
        #expect(held["hold_accepted"] == 16 && held["hold_refused"] == 24, "\(held)")
        #expect(status.status == 0 && seconds < 5.0, "\(status) in \(seconds) s")
        #expect(daemon.log().contains("control connection refused"))

        let partial = try await flood(daemon, "partial", count: 12)
        #expect(partial["partial_opened"] == 12 && partial["partial_closed_by_netextd"] == 12, "\(partial)")
        #expect(Self.residentMegabytes(pid) < 200)
    }

    @Test("SIGTERM ends netextd within seconds even when a provider ignores stop")
    func shutdownFinishes() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let create = try await daemon.cli(["create", "--name", "Stubborn", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test", "--enable", "--config", "ignoreStop=yes"])
        #expect(create.status == 0, "\(create)")
        #expect(try await daemon.cli(["start", "Stubborn"]).status == 0)
        let began = Date()
        _ = await daemon.stop()
        let seconds = Date().timeIntervalSince(began)
        // 2.5 s of patience and 0.5 s of grace: about 3 s on a quiet machine (6.4 s was seen on a
        // loaded CI); a provider waited for to the end would hold netextd until the harness's kill.
        #expect(seconds < 12, "netextd took \(seconds) s to exit")
        #expect(daemon.log().contains("provider did not stop in time for shutdown; terminating"), "\(daemon.log())")
        #expect(daemon.log().contains("netextd stopped"), "the shutdown finished by itself, not through the watchdog: \(daemon.log())")
    }
}
