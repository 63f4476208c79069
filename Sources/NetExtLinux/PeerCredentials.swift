import Foundation

/// Who is at the other end of a Unix socket, as the kernel reports it (`SO_PEERCRED`),
/// plus the peer process's supplementary groups.
public struct PeerCredentials: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups of the peer process, read from `/proc/PID/status` right after
    /// the connection is accepted.
    public var groups: [UInt32]

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32]) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// Builds credentials from `SO_PEERCRED` values, adding the process's supplementary groups.
    public static func from(pid: Int32, uid: UInt32, gid: UInt32) -> PeerCredentials {
        PeerCredentials(pid: pid, uid: uid, gid: gid, groups: supplementaryGroups(pid: pid))
    }

    /// Whether the peer is in group `gid` (primary or supplementary).
    public func isMember(ofGroup gid: UInt32) -> Bool {
        self.gid == gid || groups.contains(gid)
    }

    /// The `Groups:` line of `/proc/PID/status`; empty if the process is gone.
    static func supplementaryGroups(pid: Int32) -> [UInt32] {
        guard pid > 0, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return [] }
        for line in status.split(separator: "\n") where line.hasPrefix("Groups:") {
            return line.dropFirst("Groups:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { UInt32($0) }
        }
        return []
    }
}

/// The kernel's `struct ucred` (pid, uid, gid as three 32-bit fields), for reading
/// `SO_PEERCRED` through APIs that take the option's value type.
public struct KernelUCred: Sendable {
    public var pid: Int32 = 0
    public var uid: UInt32 = 0
    public var gid: UInt32 = 0
    public init() {}
}
