import CNetExtLinux
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starts and reaps child processes, dropping privileges before `exec`.
public enum ProcessSpawner {
    /// Starts `executable` as `user` (nil keeps the caller's identity) with `childSocket` as its
    /// descriptor 3 and `secondSocket` (if any) as descriptor 4; with `isolateNetwork` in a new
    /// network namespace with no way out (needs root). Returns the child's pid.
    public static func spawn(
        executable: String,
        arguments: [String],
        environment: [String: String],
        user: UserDatabase.User?,
        childSocket: Int32,
        secondSocket: Int32 = -1,
        isolateNetwork: Bool = false
    ) throws(SystemError) -> Int32 {
        let flags = (user == nil ? 0 : NETEXT_SPAWN_DROP_PRIVILEGES) | (isolateNetwork ? NETEXT_SPAWN_ISOLATE_NETWORK : 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let pid = argv.withUnsafeBufferPointer { argvBuffer in
            envp.withUnsafeBufferPointer { envpBuffer in
                netext_spawn(
                    executable, argvBuffer.baseAddress, envpBuffer.baseAddress,
                    user?.uid ?? 0, user?.gid ?? 0, Int32(flags), childSocket, secondSocket)
            }
        }
        guard pid > 0 else { throw SystemError("spawn", errno: -pid, subject: executable) }
        return pid
    }

    /// Waits for a child to exit (blocking); returns its exit status as `waitpid` reports it.
    public static func waitForExit(pid: Int32) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        return status
    }

    /// Sends a signal to a process.
    @discardableResult
    public static func signal(_ signal: Int32, to pid: Int32) -> Bool {
        kill(pid, signal) == 0
    }

    /// The exit code in a `waitpid` status, or nil when the process was killed by a signal.
    public static func exitCode(of status: Int32) -> Int32? {
        status & 0x7f == 0 ? (status >> 8) & 0xff : nil
    }

    /// A human description of a `waitpid` status.
    public static func describe(exitStatus status: Int32) -> String {
        if let code = exitCode(of: status) { return "exited with status \(code)" }
        return "killed by signal \(status & 0x7f)"
    }
}
