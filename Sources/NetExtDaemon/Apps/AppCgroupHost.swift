import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

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
    /// Gives every socket created from now on in `path` (relative) or below it the mark `mark`
    /// (an eBPF program on the cgroup); false if this host cannot (the nftables rule still marks
    /// their packets, later).
    func markSockets(in path: String, mark: UInt32) -> Bool
    /// Stops doing so.
    func unmarkSockets(in path: String, mark: UInt32)
    /// The cgroup's id (what sock_diag reports for its sockets) and its `cgroup.procs` path.
    func identity(of path: String) -> (id: UInt64, procs: String)?
}

extension AppCgroupHost {
    public func markSockets(in path: String, mark: UInt32) -> Bool { false }
    public func unmarkSockets(in path: String, mark: UInt32) {}
    public func identity(of path: String) -> (id: UInt64, procs: String)? { nil }
}

/// The machine's cgroup v2 hierarchy (found in `/proc/self/mountinfo`), watched with inotify.
public final class SystemAppCgroups: AppCgroupHost {
    let tree: CgroupTree
    private let watcher = CgroupWatcher()
    /// One loaded program per mark; nil once loading failed (no eBPF here: nft alone marks).
    private let programs = Mutex<[UInt32: SocketMarkProgram?]>([:])

    private let marksSockets: Bool
    /// Without socket marks: the cgroups already cleared of programs left by an earlier netextd.
    private let cleared = Mutex<Set<String>>([])

    /// The hierarchy this process sees; throws a sentence if none is mounted. `marksSockets`:
    /// whether apps' sockets get their mark from an eBPF program at creation.
    public init(marksSockets: Bool = true) throws(NetExtError) {
        self.marksSockets = marksSockets
        do { tree = try CgroupTree.current() } catch {
            throw NetExtError(.connectionFailed, "per-app routing needs cgroup v2: \(error.description)")
        }
    }

    public var nftPathPrefix: String? { tree.nftPathPrefix }
    public func scan() -> [String] { tree.scan() }
    public func identity(of path: String) -> (id: UInt64, procs: String)? { tree.identity(of: path) }

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

    public func markSockets(in path: String, mark: UInt32) -> Bool {
        guard marksSockets else {
            // A program an earlier netextd left would keep marking behind the table's back
            // (cleared once per cgroup).
            if cleared.withLock({ $0.insert(path).inserted }) { SocketMarkProgram.detachAny(fromCgroup: tree.mountPoint + "/" + path) }
            return false
        }
        let program: SocketMarkProgram? = programs.withLock { loaded in
            if let known = loaded[mark] { return known }
            let made = try? SocketMarkProgram(mark: mark)
            loaded[mark] = .some(made)
            return made
        }
        guard let program else { return false }
        do { try program.attach(toCgroup: tree.mountPoint + "/" + path) } catch { return false }
        return true
    }

    public func unmarkSockets(in path: String, mark: UInt32) {
        guard let program = programs.withLock({ $0[mark] ?? nil }) else { return }
        program.detach(fromCgroup: tree.mountPoint + "/" + path)
    }
}
