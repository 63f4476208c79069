import Foundation
import NetExtTestSupport
import Testing
@testable import NetExtLinux

@Suite("System tools run with a deadline")
struct CommandRunnerTests {
    @Test func standardInputReachesTheToolAndItsOutputComesBack() {
        let text = String(repeating: "table inet x { }\n", count: 20_000)  // 340 KB: more than a pipe holds
        let outcome = CommandRunner.execute("/bin/cat", [], input: text)
        #expect(outcome.status == 0)
        #expect(outcome.output == text)
    }

    @Test func exitStatusAndStandardErrorAreKept() {
        let outcome = CommandRunner.execute("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(outcome.status == 3)
        #expect(outcome.output.contains("out") && outcome.output.contains("err"))
        #expect(!outcome.timedOut)
    }

    @Test func aHungToolIsKilledWithItsChildrenAtTheDeadline() throws {
        let marker = NSTemporaryDirectory() + "netext-runner-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let started = Date()
        // The child's child holds the output pipe open and would outlive a plain kill.
        let outcome = CommandRunner.execute("/bin/sh", ["-c", "sleep 30 & echo $! > \(marker); wait"], deadline: 0.5)
        let elapsed = Date().timeIntervalSince(started)
        #expect(outcome.timedOut && outcome.status == -1)
        #expect(outcome.output.contains("did not finish within"))
        #expect(elapsed < 3, "took \(elapsed) s")
        let grandchild = try #require(Int32(try String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        var gone = false
        for _ in 0..<100 where !gone {
            gone = kill(grandchild, 0) != 0 || (try? String(contentsOfFile: "/proc/\(grandchild)/stat", encoding: .utf8))?.contains(") Z ") == true
            if !gone { usleep(10_000) }
        }
        #expect(gone, "the sleep the tool started is still running")
    }

    @Test func aMissingToolIsAClearError() {
        let outcome = CommandRunner.execute("/nonexistent/ip", ["link"])
        #expect(outcome.status == -1)
        #expect(outcome.output.contains("cannot run ip"))
    }

    /// Other suites open and close descriptors meanwhile, so this counts the whole process (the
    /// fewest of five looks a second apart afterwards) and runs the tool often enough that a leak
    /// of even one descriptor a run (+3,000) stands far above that noise (+640 was seen with the
    /// integration suites starting beside it).
    @Test func noDescriptorLeaksAcrossManyRuns() async throws {
        let before = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        // 3,000 forks take 40 s or more under a full run: on a thread of their own, since on one
        // of the task pool's two threads they starved every other test's servers (a sampled full
        // run caught this loop holding a pool thread for its whole 41 s, while CPU-bound tests
        // held the other).
        try await offPool {
            for _ in 0..<2400 { _ = CommandRunner.execute("/bin/true", []) }
            for _ in 0..<600 { _ = CommandRunner.execute("/bin/cat", [], input: "x") }
        }
        var after = Int.max
        for look in 0..<5 {
            if look > 0 { try await Task.sleep(for: .seconds(1)) }
            after = min(after, try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count)
        }
        #expect(after < before + 1_500, "\(before) → \(after) descriptors after 3,000 runs")
    }
}

@Suite("Descriptor limit")
struct DescriptorLimitTests {
    @Test func raisingNeverLowersAndReachesTheHardLimitOrTheCeiling() {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let (before, after) = DescriptorLimit.raise(ceiling: 65536)
        #expect(after >= before)
        #expect(after == max(before, min(UInt64(limit.rlim_max), 65536)))
        var now = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &now)
        #expect(UInt64(now.rlim_cur) == after)
    }
}

@Suite("System tools that stop reading")
struct CommandRunnerEarlyExitTests {
    @Test func aToolThatExitsBeforeReadingItsInputIsNoSIGPIPE() {
        let outcome = CommandRunner.execute("/bin/sh", ["-c", "exit 4"], input: String(repeating: "x", count: 1 << 20))
        #expect(outcome.status == 4 && !outcome.timedOut)
    }
}
