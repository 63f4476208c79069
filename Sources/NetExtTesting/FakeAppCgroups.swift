import NetExtCore
import NetExtDaemon
import Synchronization

/// An in-memory cgroup v2 hierarchy for testing per-app routing without root: cgroups made and
/// removed by the test (as systemd or Flatpak would) or by netextd (`place`), the processes in
/// each, and the watcher's call, made when the test says the tree changed.
public final class FakeAppCgroups: AppCgroupHost {
    private struct State {
        var cgroups: Set<String> = []
        var processes: [String: Set<Int32>] = [:]
        var onChange: (@Sendable () -> Void)?
        var socketMarks: [String: UInt32] = [:]
    }

    private let state = Mutex(State())
    public let nftPathPrefix: String?

    public init(nftPathPrefix: String? = "unified/") {
        self.nftPathPrefix = nftPathPrefix
    }

    /// Every cgroup, parents before children.
    public func scan() -> [String] {
        state.withLock { $0.cgroups.sorted { ($0.split(separator: "/").count, $0) < ($1.split(separator: "/").count, $1) } }
    }

    public func place(pid: Int32, in path: String) throws(NetExtError) {
        state.withLock { state in
            Self.insert(path, into: &state.cgroups)
            for key in state.processes.keys { state.processes[key]?.remove(pid) }
            state.processes[path, default: []].insert(pid)
        }
    }

    public func removeIfEmpty(_ path: String, keeping: String) {
        state.withLock { state in
            var components = path.split(separator: "/").map(String.init)
            while components.count > keeping.split(separator: "/").count {
                let current = components.joined(separator: "/")
                let hasChildren = state.cgroups.contains { $0.hasPrefix(current + "/") }
                guard state.processes[current, default: []].isEmpty, !hasChildren else { return }
                state.cgroups.remove(current)
                components.removeLast()
            }
        }
    }

    public func startWatching(_ onChange: @escaping @Sendable () -> Void) { state.withLock { $0.onChange = onChange } }
    public func stopWatching() { state.withLock { $0.onChange = nil } }

    public func markSockets(in path: String, mark: UInt32) -> Bool {
        state.withLock { $0.socketMarks[path] = mark }
        return true
    }

    public func unmarkSockets(in path: String, mark: UInt32) {
        state.withLock { if $0.socketMarks[path] == mark { $0.socketMarks[path] = nil } }
    }

    /// The cgroups whose new sockets netextd marks at creation, with the mark.
    public var socketMarks: [String: UInt32] { state.withLock { $0.socketMarks } }

    /// Whether netextd watches the tree now.
    public var isWatched: Bool { state.withLock { $0.onChange != nil } }

    /// Makes a cgroup (and its parents), as a desktop makes an app's scope, and tells the watcher.
    public func make(_ path: String, notify: Bool = true) {
        let onChange = state.withLock { state in
            Self.insert(path, into: &state.cgroups)
            return state.onChange
        }
        if notify { onChange?() }
    }

    /// Removes a cgroup and its descendants, and tells the watcher.
    public func remove(_ path: String) {
        let onChange = state.withLock { state in
            state.cgroups = state.cgroups.filter { $0 != path && !$0.hasPrefix(path + "/") }
            return state.onChange
        }
        onChange?()
    }

    /// The processes netextd placed in `path`.
    public func processes(in path: String) -> Set<Int32> { state.withLock { $0.processes[path] ?? [] } }

    /// Ends process `pid` (it leaves its cgroup).
    public func exit(pid: Int32) {
        state.withLock { state in for key in state.processes.keys { state.processes[key]?.remove(pid) } }
    }

    private static func insert(_ path: String, into cgroups: inout Set<String>) {
        let components = path.split(separator: "/")
        for end in 1...max(1, components.count) where end <= components.count { cgroups.insert(components[..<end].joined(separator: "/")) }
    }
}
