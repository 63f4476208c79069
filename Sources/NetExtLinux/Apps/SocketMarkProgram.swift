import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// An eBPF program of the kind `BPF_CGROUP_INET_SOCK_CREATE` that marks every socket created in
/// the cgroups it is attached to (and in their descendants) with one mark, before the socket's
/// first route lookup: a per-app VPN's flows then pick the tunnel's route — and its source
/// address — from their first packet, with no rerouting or address translation after the fact.
/// Four instructions, assembled here (no compiler or libbpf); needs `CAP_BPF`/root and a kernel
/// with `CONFIG_CGROUP_BPF`.
public final class SocketMarkProgram: Sendable {
    public let mark: UInt32
    private let fd: Int32

    /// Loads the program; throws with the verifier's first line if the kernel refuses it.
    public init(mark: UInt32) throws(SystemError) {
        var log = [CChar](repeating: 0, count: 4096)
        let result = netext_bpf_socket_mark_program(mark, &log, UInt32(log.count))
        guard result >= 0 else {
            let verifier = String(cString: log).split(separator: "\n").first.map { ": \($0)" } ?? ""
            throw SystemError("bpf(BPF_PROG_LOAD)", errno: -result, subject: "socket mark program\(verifier)")
        }
        self.mark = mark
        self.fd = result
    }

    /// Attaches the program to the cgroup directory at `path` (absolute), replacing the program
    /// of its kind attached there (one left by a netextd that crashed).
    public func attach(toCgroup path: String) throws(SystemError) {
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw SystemError("open", errno: errno, subject: path) }
        defer { close(directory) }
        let result = netext_bpf_cgroup_attach(directory, fd)
        guard result == 0 else { throw SystemError("bpf(BPF_PROG_ATTACH)", errno: -result, subject: path) }
    }

    /// Detaches it (a cgroup already removed has let it go by itself).
    public func detach(fromCgroup path: String) {
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return }
        defer { close(directory) }
        _ = netext_bpf_cgroup_detach(directory, fd)
    }

    /// Detaches whatever program of this kind is attached to the cgroup at `path` (in override
    /// mode there is at most one: a netextd that crashed may have left its own). Returns whether
    /// one was.
    @discardableResult
    public static func detachAny(fromCgroup path: String) -> Bool {
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return false }
        defer { close(directory) }
        return netext_bpf_cgroup_detach(directory, -1) == 0
    }

    deinit { close(fd) }
}
