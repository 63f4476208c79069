import Foundation
import NetExtCore
import NetExtLinux

/// The cgroup v2 hierarchy as the flow steering uses it; the real one is ``SystemAppCgroups``,
/// tests give a fake.
public protocol AppCgroupHost: Sendable {
    /// What nft puts before a path relative to the root (nil: nft cannot name this hierarchy's
    /// cgroups, and the steering cannot run).
    var nftPathPrefix: String? { get }
    /// Every cgroup below the root, relative to it.
    func scan() -> [String]
    /// Makes `path` if missing and moves process `pid` into it.
    func place(pid: Int32, in path: String) throws(NetExtError)
    /// Removes `path` and its parents below `keeping` where empty.
    func removeIfEmpty(_ path: String, keeping: String)
    /// Calls `onChange` after cgroups appear or disappear.
    func startWatching(_ onChange: @escaping @Sendable () -> Void)
    /// Stops calling.
    func stopWatching()
}

/// The machine's cgroup v2 hierarchy (found in `/proc/self/mountinfo`), watched with inotify.
public final class SystemAppCgroups: AppCgroupHost {
    let tree: CgroupTree
    private let watcher = CgroupWatcher()

    /// The hierarchy this process sees; throws a sentence if none is mounted.
    public init() throws(NetExtError) {
        do { tree = try CgroupTree.current() } catch {
            throw NetExtError(.connectionFailed, "per-app routing needs cgroup v2: \(error.description)")
        }
    }

    public var nftPathPrefix: String? { tree.nftPathPrefix }
    public func scan() -> [String] { tree.scan() }

    public func place(pid: Int32, in path: String) throws(NetExtError) {
        do {
            try tree.make(path)
            try tree.move(pid: pid, to: path)
        } catch {
            throw NetExtError(.connectionFailed, error.description)
        }
    }

    public func removeIfEmpty(_ path: String, keeping: String) { tree.removeIfEmpty(path, keeping: keeping) }
    public func startWatching(_ onChange: @escaping @Sendable () -> Void) { watcher.start(root: tree.mountPoint, onChange: onChange) }
    public func stopWatching() { watcher.stop() }
}
