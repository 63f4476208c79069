import Foundation
import NetExtTransport
#if canImport(Glibc)
import Glibc
#endif

/// Reaches the user's transfer service, starting it when none answers: `netext-transferd`
/// from `$NETEXT_TRANSFERD`, beside this program, in `/usr/libexec/netext`, or on `$PATH`,
/// spawned in a session of its own so that it outlives the app (as D-Bus starts services on
/// demand). Two apps starting it at once are fine: the second service finds the first's
/// socket answering and exits.
enum TransferServiceLauncher {
    /// How long a started service gets to answer.
    static let startWait: Duration = .seconds(5)

    static func connect(socketPath: String) async throws(HTTPLoadError) -> FramedConnection {
        if let connection = try? await FramedConnection.connect(unixSocketPath: socketPath) { return connection }
        guard let executable = executable() else {
            throw .transferServiceUnavailable(
                "nothing answers on \(socketPath) and netext-transferd was not found (set $NETEXT_TRANSFERD to its path, or install the netext package)")
        }
        try spawn(executable, socketPath: socketPath)
        let deadline = ContinuousClock.now + startWait
        var lastError = ""
        while ContinuousClock.now < deadline {
            do { return try await FramedConnection.connect(unixSocketPath: socketPath) } catch {
                lastError = "\(error)"
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        throw .transferServiceUnavailable("\(executable) was started but did not answer on \(socketPath) within \(startWait) (\(lastError))")
    }

    static func executable() -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["NETEXT_TRANSFERD"], !path.isEmpty { return path }
        var candidates: [String] = []
        if let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((own as NSString).deletingLastPathComponent + "/netext-transferd")
        }
        candidates.append("/usr/libexec/netext/netext-transferd")
        for directory in (environment["PATH"] ?? "/usr/local/bin:/usr/bin").split(separator: ":") {
            candidates.append("\(directory)/netext-transferd")
        }
        return candidates.first { access($0, X_OK) == 0 }
    }

    /// Starts the service detached: its own session, standard input and output on /dev/null
    /// (it writes its log under its state directory), its socket path in its environment.
    private static func spawn(_ executable: String, socketPath: String) throws(HTTPLoadError) {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc ≥ 2.26, 0x80; the headers define it only under _GNU_SOURCE).
        posix_spawnattr_setflags(&attributes, 0x80)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["NETEXT_TRANSFERS_SOCKET"] = socketPath
        let arguments = [executable]
        let variables = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let result = withCStrings(arguments) { argv in
            withCStrings(variables) { envp in posix_spawn(&pid, executable, &actions, &attributes, argv, envp) }
        }
        guard result == 0 else {
            throw .transferServiceUnavailable("\(executable) could not be started: \(String(cString: strerror(result)))")
        }
        // Reaped by whoever adopts it once this process exits; a zombie until then is harmless,
        // but reap it if it exits early (the second of two racing starts).
        let child = pid
        Thread.detachNewThread {
            var status: Int32 = 0
            _ = waitpid(child, &status, 0)
        }
    }

    private static func withCStrings<Result>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> Result) -> Result {
        var pointers = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
