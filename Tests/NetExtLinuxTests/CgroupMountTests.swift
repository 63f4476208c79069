import Foundation
import Testing
@testable import NetExtLinux

/// Finding the cgroup v2 hierarchy (issue 20) from mountinfo text: unified and hybrid layouts,
/// escaped mount points, lines that do not parse, and this machine's own mount.
@Suite("cgroup v2 mount")
struct CgroupMountTests {
    static let hybrid = """
        31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
        32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
        40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
        """

    @Test func findsTheHybridLayoutsUnifiedMount() throws {
        #expect(try CgroupMount.mountPoint(inMountInfo: Self.hybrid) == "/sys/fs/cgroup/unified")
    }

    @Test func findsAUnifiedMountWithOptionalFieldsAndSkipsAContainersSubtree() throws {
        let text = """
            25 1 0:23 /machine.slice/x /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw
            26 1 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 master:1 - cgroup2 cgroup2 rw,nsdelegate
            """
        #expect(try CgroupMount.mountPoint(inMountInfo: text) == "/sys/fs/cgroup")
    }

    @Test func undoesOctalEscapesInTheMountPoint() throws {
        #expect(try CgroupMount.mountPoint(inMountInfo: "9 1 0:5 / /mnt/my\\040cgroups\\134x rw - cgroup2 none rw") == "/mnt/my cgroups\\x")
        #expect(CgroupMount.unescape("/a\\0") == "/a\\0")
        #expect(CgroupMount.unescape("/a\\999") == "/a\\999")
    }

    @Test func noCgroup2MountIsASentence() {
        let error = #expect(throws: CgroupMount.Failure.self) { try CgroupMount.mountPoint(inMountInfo: "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n") }
        #expect(error?.description.hasPrefix("no cgroup v2 hierarchy is mounted") == true)
    }

    /// Random bytes, random truncations and shuffled fields of real lines: never a crash, and
    /// whatever is returned came from a line that says cgroup2.
    @Test func arbitraryTextNeverCrashes() {
        var random = SystemRandomNumberGenerator()
        let lines = Self.hybrid.split(separator: "\n").map(String.init)
        for round in 0..<2000 {
            var text: String
            switch round % 3 {
            case 0: text = String(decoding: (0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }, as: UTF8.self)
            case 1: text = lines.map { String($0.prefix(Int.random(in: 0...$0.count, using: &random))) }.joined(separator: "\n")
            default: text = lines.map { $0.split(separator: " ").shuffled(using: &random).joined(separator: " ") }.joined(separator: "\n")
            }
            if let found = try? CgroupMount.mountPoint(inMountInfo: text) {
                #expect(text.contains("cgroup2"), "\(text) gave \(found)")
            }
        }
    }

    @Test func thisMachinesHierarchyHasItsControlFiles() throws {
        let mount = try CgroupMount.current()
        #expect(FileManager.default.fileExists(atPath: mount + "/cgroup.procs"), "\(mount)")
    }
}
