import Foundation
import NetExtTestSupport
import Synchronization
import Testing
@testable import NetExtLinux

/// The real cgroup v2 hierarchy: a cgroup made, a process moved in, the tree scanned and watched,
/// everything under a name unique to the run and removed afterwards. Needs root.
@Suite("cgroup v2 tree and watcher", .enabled(if: getuid() == 0, "needs root: writes the cgroup hierarchy"), .serialized)
struct CgroupTreeTests {
    @Test("make, move a process in, scan, read /proc/PID/cgroup, remove when empty")
    func makeMoveScanRemove() throws {
        let tree = try CgroupTree.current()
        let base = "netext-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { tree.removeIfEmpty(base + "/app/inner") }
        try tree.make(base + "/app")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["30"]
        try child.run()
        defer { kill(child.processIdentifier, SIGKILL); waitForExit(child, seconds: 10) }
        try tree.move(pid: child.processIdentifier, to: base + "/app")
        #expect(CgroupTree.cgroup(ofProcess: child.processIdentifier) == base + "/app")
        #expect(tree.scan().contains(base + "/app"))
        #expect(tree.scan(limit: 1).count == 1, "the walk stops at its limit")
        tree.removeIfEmpty(base + "/app")
        #expect(tree.scan().contains(base + "/app"), "a cgroup with a process stays")
        #expect(throws: CgroupTree.Failure.self) { try tree.move(pid: child.processIdentifier, to: base + "/missing") }
        kill(child.processIdentifier, SIGKILL)
        waitForExit(child, seconds: 10)
        tree.removeIfEmpty(base + "/app")
        #expect(!tree.scan().contains { $0.hasPrefix(base) }, "emptied, the cgroup and its parent are gone")
        if let prefix = tree.nftPathPrefix { #expect(prefix.isEmpty || prefix.hasSuffix("/")) }
    }

    @Test("the watcher reports cgroups made below new ones, and removals")
    func watcher() async throws {
        let tree = try CgroupTree.current()
        let base = "netext-watch-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { tree.removeIfEmpty(base + "/a/b/c") }
        let changes = Atomic<Int>(0)
        let watcher = CgroupWatcher()
        #expect(watcher.start(root: tree.mountPoint) { changes.add(1, ordering: .relaxed) })
        defer { watcher.stop() }
        try await Task.sleep(for: .milliseconds(200))
        try tree.make(base + "/a")
        #expect(await waitFor { changes.load(ordering: .relaxed) >= 1 })
        // A cgroup below the new one: its parent was given a watch when its creation was read.
        let before = changes.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(300))
        try tree.make(base + "/a/b/c")
        #expect(await waitFor { changes.load(ordering: .relaxed) > before })
        let beforeRemoval = changes.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(300))
        tree.removeIfEmpty(base + "/a/b/c")
        #expect(await waitFor { changes.load(ordering: .relaxed) > beforeRemoval })
    }

    func waitFor(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<100 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
