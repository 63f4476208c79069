import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// Finds the process behind a flow's local socket: sock_diag gives the socket's inode, and the
/// process is the one with `socket:[inode]` among its descriptors in /proc. Processes that
/// owned recent flows are searched first (a program usually opens many connections), the whole
/// of /proc only when they do not have it. Not thread-safe: one instance per thread.
public final class SocketOwnerLookup {
    public struct Process: Sendable, Hashable {
        public var pid: Int32
        /// `/proc/PID/exe` (empty if unreadable, e.g. the process has exited).
        public var executable: String
        /// The cgroup v2 path from `/proc/PID/cgroup` (`0::/…`), if any.
        public var cgroup: String?
    }

    private var recent: [Int32] = []
    private static let recentLimit = 16
    private let diagnostics: Int32
    /// Executable and cgroup per pid, read once per `detailsLifetime`.
    private var details: [Int32: (process: Process, read: ContinuousClock.Instant)] = [:]
    private static let detailsLifetime: Duration = .seconds(2)
    /// The most processes a full /proc scan looks at (bounded work per flow).
    private static let scanLimit = 65_536

    public init() {
        diagnostics = netext_sock_diag_open()
    }

    deinit {
        if diagnostics >= 0 { close(diagnostics) }
    }

    /// The process owning the local TCP/UDP socket of a flow, or nil when the socket or its
    /// process cannot be found (it closed, or the descriptor is not accepted yet).
    public func process(isIPv6: Bool, isTCP: Bool, local: [UInt8], localPort: UInt16, remote: [UInt8], remotePort: UInt16) -> Process? {
        guard diagnostics >= 0 else { return nil }
        var inode: UInt32 = 0
        var uid: UInt32 = 0
        let result = local.withUnsafeBufferPointer { localBytes in
            remote.withUnsafeBufferPointer { remoteBytes in
                netext_socket_inode(diagnostics, isIPv6 ? 1 : 0, isTCP ? Int32(IPPROTO_TCP) : Int32(IPPROTO_UDP),
                                    localBytes.baseAddress, localPort, remoteBytes.baseAddress, remotePort, &inode, &uid)
            }
        }
        guard result == 0, inode != 0 else { return nil }
        let target = "socket:[\(inode)]"
        for (index, pid) in recent.enumerated() where Self.process(pid, holds: target) {
            if index > 0 {
                recent.remove(at: index)
                recent.insert(pid, at: 0)
            }
            return describe(pid)
        }
        guard let pid = Self.scan(for: target, skipping: Set(recent)) else { return nil }
        recent.insert(pid, at: 0)
        if recent.count > Self.recentLimit { recent.removeLast() }
        return describe(pid)
    }

    /// The cgroup v2 id of the local end of a TCP connection (the cgroup directory's inode), from
    /// one sock_diag answer; nil where the socket is gone or the kernel does not say.
    public func cgroupID(isIPv6: Bool, local: [UInt8], localPort: UInt16, remote: [UInt8], remotePort: UInt16) -> UInt64? {
        guard diagnostics >= 0 else { return nil }
        var cgroup: UInt64 = 0
        var uid: UInt32 = 0
        let result = local.withUnsafeBufferPointer { localBytes in
            remote.withUnsafeBufferPointer { remoteBytes in
                netext_socket_cgroup(diagnostics, isIPv6 ? 1 : 0, localBytes.baseAddress, localPort, remoteBytes.baseAddress, remotePort, &cgroup, &uid)
            }
        }
        return result == 0 && cgroup != 0 ? cgroup : nil
    }

    /// The only process in a cgroup (its `cgroup.procs` at `procsPath`), described; nil when
    /// it holds none or several.
    public func soleProcess(inCgroupProcs procsPath: String) -> Process? {
        // Read once per `detailsLifetime` / 4 (a burst of connections reads it once).
        let now = ContinuousClock.now
        if let cached = soleProcesses[procsPath], now - cached.read < Self.detailsLifetime / 4 { return cached.process }
        let process = readSoleProcess(procsPath)
        if soleProcesses.count > 1_024 { soleProcesses.removeAll(keepingCapacity: true) }
        soleProcesses[procsPath] = (process, now)
        return process
    }

    private var soleProcesses: [String: (process: Process?, read: ContinuousClock.Instant)] = [:]

    private func readSoleProcess(_ procsPath: String) -> Process? {
        guard let file = fopen(procsPath, "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 32)
        guard fgets(&line, Int32(line.count), file) != nil, let pid = Int32(String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) else { return nil }
        guard fgets(&line, Int32(line.count), file) == nil else { return nil }
        return describe(pid)
    }

    private func describe(_ pid: Int32) -> Process {
        let now = ContinuousClock.now
        if let cached = details[pid], now - cached.read < Self.detailsLifetime { return cached.process }
        let process = Process(pid: pid, executable: Self.readLink("/proc/\(pid)/exe") ?? "", cgroup: Self.cgroupPath(of: pid))
        if details.count > 1_024 { details.removeAll(keepingCapacity: true) }
        details[pid] = (process, now)
        return process
    }

    /// Looks through /proc newest process first: a flow's program that is not among the recent
    /// ones has most likely just started (pids are handed out in increasing order until they
    /// wrap).
    private static func scan(for target: String, skipping: Set<Int32>) -> Int32? {
        guard let directory = opendir("/proc") else { return nil }
        var pids: [Int32] = []
        while let entry = readdir(directory), pids.count < scanLimit {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let pid = Int32(name), !skipping.contains(pid) { pids.append(pid) }
        }
        closedir(directory)
        return pids.sorted(by: >).first { process($0, holds: target) }
    }

    private static func process(_ pid: Int32, holds target: String) -> Bool {
        let path = "/proc/\(pid)/fd"
        guard let directory = opendir(path) else { return false }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.first?.isNumber == true else { continue }
            if readLink("\(path)/\(name)") == target { return true }
        }
        return false
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4_096)
        let length = readlink(path, &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func cgroupPath(of pid: Int32) -> String? {
        guard let file = fopen("/proc/\(pid)/cgroup", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 4_096)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("0::") {
                var path = String(text.dropFirst(3))
                while path.hasSuffix("\n") { path.removeLast() }
                return path
            }
        }
        return nil
    }
}
