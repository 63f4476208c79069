import Foundation
import NetExtLinux
import NetExtTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Whether the tests that start real daemons and switch users can run (CI runs as root).
let isRoot = getuid() == 0

/// The directory holding the built executables.
let binaryDirectory = BuiltBinaries.directory

let fixturesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures").path

/// What a finished command printed and how it exited.
struct CommandResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Another user to run a command as (through `setpriv`).
struct RunAs {
    var uid: UInt32
    var gid: UInt32
    var groups: [UInt32] = []
    static let nobody = RunAs(uid: 65534, gid: 65534)
}

/// Foundation's `Process` passes on the spawning thread's signal mask, and test threads block
/// almost every signal: a child would then ignore SIGTERM (and so would everything it starts).
/// Every command the tests run goes through this wrapper, which clears the mask and then execs.
func unblockingSignals(_ executable: String, _ arguments: [String]) -> (String, [String]) {
    let script = "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])"
    return ("/usr/bin/env", ["python3", "-c", script, executable] + arguments)
}

/// Runs a program to completion, at most `timeout` seconds (then it is killed), on a thread of
/// its own: the wait never holds one of the task pool's threads (two on this machine). Tests
/// that held them with blocking waits stalled every other suite for about a minute.
@discardableResult
func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil, as user: RunAs? = nil, timeout: Double = 60) async throws -> CommandResult {
    try await offPool { try runBlocking(executable, arguments, environment: environment, stdin: stdin, as: user, timeout: timeout) }
}

/// As `run`, blocking the calling thread (call it only off the task pool).
func runBlocking(_ executable: String, _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil, as user: RunAs? = nil, timeout: Double = 60) throws -> CommandResult {
    let process = Process()
    var command = (executable, arguments)
    if let user {
        let groups = user.groups.isEmpty ? ["--clear-groups"] : ["--groups=\(user.groups.map(String.init).joined(separator: ","))"]
        command = ("/usr/bin/setpriv", ["--reuid=\(user.uid)", "--regid=\(user.gid)"] + groups + ["--", executable] + arguments)
    }
    let (wrapper, wrapped) = unblockingSignals(command.0, command.1)
    process.executableURL = URL(fileURLWithPath: wrapper)
    process.arguments = wrapped
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = Pipe()
    let errors = Pipe()
    let input = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    // Read both pipes concurrently so a chatty child never blocks, each on a thread of its own:
    // on Dispatch's global queue a reader could wait behind other tests' blocked readers past
    // the 10 s below under the full suite's load, and the output came back empty.
    let collected = CollectedOutput()
    let group = DispatchGroup()
    for (pipe, isError) in [(output, false), (errors, true)] {
        group.enter()
        Thread {
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            collected.set(data, isError: isError)
            group.leave()
        }.start()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
        process.terminate()
        usleep(200_000)
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
    let exited = waitForExit(process, seconds: 20)
    // A grandchild that kept the pipes open must not hang the test: stop waiting after 10 s and
    // return what was read. The handles are left open: closing one under its blocked reader
    // makes Foundation's readDataToEndOfFile trap (EBADF through a try!), which killed the whole
    // test process once; the reader ends by itself when the grandchild does.
    _ = group.wait(timeout: .now() + 10)
    return CommandResult(status: exited ? process.terminationStatus : -1, stdout: collected.stdout, stderr: collected.stderr)
}

final class CollectedOutput: @unchecked Sendable {
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    func set(_ data: Data, isError: Bool) {
        lock.lock()
        if isError { err = data } else { out = data }
        lock.unlock()
    }
    var stdout: String { lock.lock(); defer { lock.unlock() }; return String(decoding: out, as: UTF8.self) }
    var stderr: String { lock.lock(); defer { lock.unlock() }; return String(decoding: err, as: UTF8.self) }
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes (sleeping, never blocking
/// a thread of the task pool).
func waitUntil(timeout: Double = 15, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// The repository's root directory (the lab scripts are run from it).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

/// Runs a lab script (scripts/e2e/…) with this build's binaries and expects every one of its
/// checks (at least `checks` of them) to pass.
@discardableResult
func runChecks(_ script: String, checks: Int, timeout: Double = 240, environment: [String: String] = [:]) async throws -> CommandResult {
    let result = try await run(
        "/bin/bash", [repositoryRoot + "/" + script],
        environment: environment.merging(["NETEXT_BIN_DIR": binaryDirectory]) { _, binaries in binaries }, timeout: timeout)
    let lines = result.stdout.split(separator: "\n")
    #expect(result.status == 0 && !lines.contains { $0.hasPrefix("FAIL") }, "\(result)")
    #expect(result.stdout.contains("ALL CHECKS PASSED"))
    #expect(lines.filter { $0.hasPrefix("PASS") }.count >= checks, "\(result.stdout)")
    return result
}
