import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The cgroup v2 hierarchy at its mount point: what netextd reads and writes for flow steering
/// (cgroups(7), "cgroups version 2"): the directories below the root, a cgroup made for a
/// launched app, a process moved into it (`cgroup.procs`), and an empty one removed.
public struct CgroupTree: Sendable, Hashable {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Where the hierarchy is mounted (``CgroupMount/current()``).
    public let mountPoint: String

    public init(mountPoint: String) {
        self.mountPoint = mountPoint.count > 1 && mountPoint.hasSuffix("/") ? String(mountPoint.dropLast()) : mountPoint
    }

    /// The tree this process sees.
    public static func current() throws(Failure) -> CgroupTree {
        do { return CgroupTree(mountPoint: try CgroupMount.current()) } catch { throw Failure(description: error.description) }
    }

    /// What nft puts before a path relative to the root: nft resolves `socket cgroupv2` paths
    /// below `/sys/fs/cgroup`, so the hierarchy must be mounted there or below; nil otherwise.
    public var nftPathPrefix: String? {
        if mountPoint == "/sys/fs/cgroup" { return "" }
        guard mountPoint.hasPrefix("/sys/fs/cgroup/") else { return nil }
        return String(mountPoint.dropFirst("/sys/fs/cgroup/".count)) + "/"
    }

    /// A cgroup's id (its directory's inode: what sock_diag reports for a socket created in it)
    /// and the path of its `cgroup.procs`; nil if it is gone.
    public func identity(of path: String) -> (id: UInt64, procs: String)? {
        let directory = path.isEmpty ? mountPoint : mountPoint + "/" + path
        var status = stat()
        guard stat(directory, &status) == 0 else { return nil }
        return (UInt64(status.st_ino), directory + "/cgroup.procs")
    }

    /// Every cgroup below the root as a path relative to it, parents before children; at most
    /// `limit` of them (a walk of a huge tree stops there rather than taking seconds).
    public func scan(limit: Int = 100_000) -> [String] {
        var found: [String] = []
        var pending: [String] = [""]
        while let relative = pending.popLast(), found.count < limit {
            for name in Self.subdirectories(of: relative.isEmpty ? mountPoint : mountPoint + "/" + relative) where found.count < limit {
                let child = relative.isEmpty ? name : relative + "/" + name
                found.append(child)
                pending.append(child)
            }
        }
        return found
    }

    /// The names of the directories in `directory` (a cgroup's children), without `.` and `..`.
    static func subdirectories(of directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            guard entry.pointee.d_type == UInt8(DT_DIR) else { continue }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Makes the cgroup `path` (relative) and its parents, if missing.
    public func make(_ path: String) throws(Failure) {
        var made = mountPoint
        for component in path.split(separator: "/") {
            made += "/" + component
            if mkdir(made, 0o755) != 0 && errno != EEXIST {
                throw Failure(description: "cannot make the cgroup \(made): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Moves process `pid` (its every thread) into the cgroup `path`.
    public func move(pid: Int32, to path: String) throws(Failure) {
        let file = mountPoint + "/" + path + "/cgroup.procs"
        let fd = open(file, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "cannot open \(file): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let text = Array("\(pid)\n".utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == text.count else {
            throw Failure(description: "cannot move process \(pid) into \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The cgroup of process `pid` in this hierarchy (relative; "" for the root), from
    /// `/proc/PID/cgroup`'s `0::` line.
    public static func cgroup(ofProcess pid: Int32) -> String? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3).drop { $0 == "/" })
        }
        return nil
    }

    /// Removes the cgroup `path` and then its parents up to (not including) `keeping`, each only
    /// if empty (the kernel refuses to remove a cgroup with processes or children).
    public func removeIfEmpty(_ path: String, keeping: String = "") {
        var components = path.split(separator: "/").map(String.init)
        let kept = keeping.split(separator: "/").count
        while components.count > kept {
            guard rmdir(mountPoint + "/" + components.joined(separator: "/")) == 0 else { return }
            components.removeLast()
        }
    }
}
