import CNetExtLinux
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs a system tool (iproute2's `ip`, `nft`, `sysctl`) to completion and collects its output,
/// within a deadline: a tool that hangs (a wedged netlink socket, a full descriptor table) is
/// killed with its process group when the deadline passes, and always reaped, so neither a
/// zombie nor a stuck thread stays behind. The call blocks its thread — netextd calls it from
/// its network worker, never from Swift's cooperative pool.
public enum CommandRunner {
    /// What a finished command did.
    public struct Outcome: Sendable, Equatable {
        /// The `waitpid` exit code (0 on success); -1 when it could not be started or ran past
        /// its deadline.
        public var status: Int32
        /// Standard output and standard error, interleaved as written (at most 1 MiB kept).
        public var output: String
        public var timedOut = false
    }

    /// Where `ip` is on this machine.
    public static let ipPath: String = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/ip"

    /// Where `nft` is on this machine, if installed.
    public static let nftPath: String? = ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The deadline of a command when the caller names none.
    public static let defaultDeadline: Double = 15

    static let outputLimit = 1 << 20

    /// A tool that exits before reading all its input must not kill the caller with SIGPIPE
    /// (netextd ignores it already; netext-server's roles run `nft` through here too): writes
    /// get EPIPE instead. Set once, for the whole process.
    private static let sigpipeIgnored: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// Runs `executable` with `arguments` (and `input` on its standard input); returns its exit
    /// status and combined output. Past `deadline` seconds the command's process group is
    /// killed and the status is -1.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], input: String? = nil, deadline: Double = defaultDeadline) -> (status: Int32, output: String) {
        let outcome = execute(executable, arguments, input: input, deadline: deadline)
        return (outcome.status, outcome.output)
    }

    /// As `run`, with the whole outcome.
    public static func execute(_ executable: String, _ arguments: [String], input: String? = nil, deadline: Double = defaultDeadline) -> Outcome {
        _ = sigpipeIgnored
        let name = (executable as NSString).lastPathComponent
        var inputPipe: [Int32] = [-1, -1], outputPipe: [Int32] = [-1, -1]
        if let failed = openPipe(&outputPipe) { return Outcome(status: -1, output: "cannot run \(name): \(failed)") }
        defer { closeAll(outputPipe) }
        // Standard input is always a pipe; without input its end is closed at once (EOF).
        if let failed = openPipe(&inputPipe) { return Outcome(status: -1, output: "cannot run \(name): \(failed)") }
        defer { closeAll(inputPipe) }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let environment: [String] = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let pid: pid_t = argv.withUnsafeBufferPointer { a in
            envp.withUnsafeBufferPointer { e in netext_spawn_piped(executable, a.baseAddress, e.baseAddress, inputPipe[0], outputPipe[1]) }
        }
        guard pid > 0 else { return Outcome(status: -1, output: "cannot run \(name): \(SystemError("spawn", errno: -pid))") }
        // Only the child holds these ends now: its exit closes the output, ours closing ends
        // its input.
        close(outputPipe[1]); outputPipe[1] = -1
        close(inputPipe[0]); inputPipe[0] = -1

        let end = monotonicSeconds() + deadline
        var pending = Array((input ?? "").utf8)[...]
        if pending.isEmpty {
            close(inputPipe[1]); inputPipe[1] = -1
        } else {
            _ = fcntl(inputPipe[1], F_SETFL, fcntl(inputPipe[1], F_GETFL) | O_NONBLOCK)
        }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        var timedOut = false
        // Feed the input and drain the output together, so that neither side can block the other.
        while outputPipe[0] >= 0 {
            let remaining = end - monotonicSeconds()
            if remaining <= 0 { timedOut = true; break }
            var fds = [pollfd(fd: outputPipe[0], events: Int16(POLLIN), revents: 0)]
            if inputPipe[1] >= 0 { fds.append(pollfd(fd: inputPipe[1], events: Int16(POLLOUT), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(remaining * 1000 + 1, 1000)))
            if ready < 0 { if errno == EINTR { continue }; break }
            if fds.count > 1, fds[1].revents != 0 {
                let written = pending.withUnsafeBytes { write(inputPipe[1], $0.baseAddress, $0.count) }
                if written > 0 { pending = pending.dropFirst(written) }
                if written < 0 && errno != EAGAIN && errno != EINTR || pending.isEmpty {
                    close(inputPipe[1]); inputPipe[1] = -1
                }
            }
            if fds[0].revents != 0 {
                let count = read(outputPipe[0], &buffer, buffer.count)
                if count > 0 {
                    if output.count < outputLimit { output += buffer[0..<min(count, outputLimit - output.count)] }
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    close(outputPipe[0]); outputPipe[0] = -1
                }
            }
        }
        // The output closed (the tool exited, or handed its descriptors on): reap, still
        // within the deadline.
        var status: Int32 = 0
        var reaped = false
        while !timedOut {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { reaped = true; break }
            if result < 0 && errno != EINTR { reaped = true; status = -1; break }
            if monotonicSeconds() >= end { timedOut = true; break }
            usleep(2000)
        }
        if !reaped {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        let text = String(decoding: output, as: UTF8.self)
        if timedOut {
            return Outcome(status: -1, output: text + "\(name) did not finish within \(Int(deadline)) s and was killed", timedOut: true)
        }
        return Outcome(status: ProcessSpawner.exitCode(of: status) ?? -1, output: text)
    }

    private static func openPipe(_ descriptors: inout [Int32]) -> SystemError? {
        let result = descriptors.withUnsafeMutableBufferPointer { netext_pipe_cloexec($0.baseAddress) }
        return result == 0 ? nil : SystemError("pipe", errno: -result)
    }

    private static func closeAll(_ descriptors: [Int32]) {
        for descriptor in descriptors where descriptor >= 0 { close(descriptor) }
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
