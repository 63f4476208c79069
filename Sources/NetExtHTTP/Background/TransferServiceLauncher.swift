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
        let child = try spawn(executable, socketPath: socketPath)
        defer { close(child.errors) }
        let deadline = ContinuousClock.now + startWait
        var lastError = ""
        while ContinuousClock.now < deadline {
            do {
                let connection = try await FramedConnection.connect(unixSocketPath: socketPath)
                reap(child.pid)
                return connection
            } catch {
                lastError = "\(error)"
            }
            var status: Int32 = 0
            if waitpid(child.pid, &status, WNOHANG) == child.pid {
                // It left without answering: its own words say why (or that another one runs).
                var said = readAll(child.errors).trimmingCharacters(in: .whitespacesAndNewlines)
                while said.hasSuffix(".") { said.removeLast() }
                if let connection = try? await FramedConnection.connect(unixSocketPath: socketPath) { return connection }
                throw .transferServiceUnavailable(said.isEmpty ? "\(executable) exited without answering on \(socketPath)" : said)
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        reap(child.pid)
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

    /// Starts the service detached: its own session, standard input and output on /dev/null,
    /// standard error on a pipe this process reads if the service exits before answering (the
    /// service lets go of it once it listens, and logs under its state directory after that).
    private static func spawn(_ executable: String, socketPath: String) throws(HTTPLoadError) -> (pid: pid_t, errors: Int32) {
        var errors: [Int32] = [0, 0]
        guard pipe(&errors) == 0, fcntl(errors[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(errors[1], F_SETFD, FD_CLOEXEC) == 0 else {
            throw .transferServiceUnavailable("no pipe for starting \(executable): \(String(cString: strerror(errno)))")
        }
        defer { close(errors[1]) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc ≥ 2.26, 0x80; the headers define it only under _GNU_SOURCE).
        posix_spawnattr_setflags(&attributes, 0x80)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
        var environment = ProcessInfo.processInfo.environment
        environment["NETEXT_TRANSFERS_SOCKET"] = socketPath
        let arguments = [executable, "--started-on-demand"]
        let variables = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let result = withCStrings(arguments) { argv in
            withCStrings(variables) { envp in posix_spawn(&pid, executable, &actions, &attributes, argv, envp) }
        }
        guard result == 0 else {
            close(errors[0])
            throw .transferServiceUnavailable("\(executable) could not be started: \(String(cString: strerror(result)))")
        }
        return (pid, errors[0])
    }

    /// Reaps the service whenever it exits (it outlives this process as a rule; then its new
    /// parent does).
    private static func reap(_ pid: pid_t) {
        Thread.detachNewThread {
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
    }

    private static func readAll(_ descriptor: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65_536 {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func withCStrings<Result>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> Result) -> Result {
        var pointers = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
