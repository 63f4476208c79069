import Foundation
import NetExtLinux
import NetExtTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real netextd on a private state directory, socket and providers directory, with the test
/// provider registered. Everything lives under one temporary directory with a unique name and is
/// removed by `tearDown()` (the daemon is killed if still running).
final class DaemonHarness: @unchecked Sendable {
    let root: String
    let socket: String
    let stateDirectory: String
    let providersDirectory: String
    let logPath: String
    let adminGroup: String
    private var process: Process?

    static let testProviderBundle = "com.netext.test-provider"

    init(adminGroup: String = "netext") throws {
        root = "/tmp/netext-it-\(UUID().uuidString.prefix(8).lowercased())"
        socket = root + "/run/netextd.sock"
        stateDirectory = root + "/state"
        providersDirectory = root + "/providers"
        logPath = root + "/netextd.log"
        self.adminGroup = adminGroup
        for directory in [root, root + "/run", providersDirectory] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        }
        try registerProvider(bundle: Self.testProviderBundle, executable: binaryDirectory + "/netext-test-provider")
    }

    /// Writes a provider manifest (mode 0644).
    func registerProvider(bundle: String, executable: String, extensionPoint: String = "packet-tunnel", user: String = "nobody", file: String? = nil) throws {
        let manifest = #"{"bundleIdentifier": "\#(bundle)", "extensionPoint": "\#(extensionPoint)", "executable": "\#(executable)", "user": "\#(user)"}"#
        let path = providersDirectory + "/" + (file ?? bundle + ".json")
        try Data(manifest.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
    }

    var environment: [String: String] {
        ["NETEXT_SOCKET": socket, "NETEXT_STATE_DIR": stateDirectory, "NETEXT_PROVIDERS_DIR": providersDirectory, "NETEXT_RESOLV_CONF": root + "/resolv.conf",
         // On-demand rules of test profiles may start the DNS stub: an unused port, never 53.
         "NETEXT_DNS_STUB": "127.0.0.1:0"]
    }

    /// Starts netextd and waits until its socket answers.
    func start(extraArguments: [String] = []) async throws {
        let process = Process()
        let (wrapper, wrapped) = unblockingSignals(binaryDirectory + "/netextd", ["--admin-group", adminGroup, "--provider-start-timeout", "10"] + extraArguments)
        process.executableURL = URL(fileURLWithPath: wrapper)
        process.arguments = wrapped
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let logHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        logHandle.seekToEndOfFile()
        process.standardError = logHandle
        process.standardOutput = logHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        let ready = await waitUntil(timeout: 20) {
            guard process.isRunning else { return true }
            return (try? await cli(["status"]).status) == 0
        }
        guard ready, process.isRunning else {
            throw HarnessError("netextd did not become ready; log:\n\(log())")
        }
    }

    var pid: Int32? { process?.processIdentifier }
    var isRunning: Bool { process?.isRunning ?? false }

    /// Runs the real `netext` CLI against this daemon.
    @discardableResult
    func cli(_ arguments: [String], stdin: String? = nil, as user: RunAs? = nil, timeout: Double = 60) async throws -> CommandResult {
        try await run(binaryDirectory + "/netext", arguments, environment: environment, stdin: stdin, as: user, timeout: timeout)
    }

    /// SIGTERM, and the daemon's exit status (killed after 20 s).
    @discardableResult
    func stop() async -> Int32? {
        guard let process, process.isRunning else { return process?.terminationStatus }
        process.terminate()
        _ = await waitUntil(timeout: 20) { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        return waitForExit(process, seconds: 20) ? process.terminationStatus : nil
    }

    /// kill -9, as a crash would.
    func crash() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        waitForExit(process, seconds: 20)
    }

    func log() -> String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// Kills the daemon if still running and removes every file.
    func tearDown() {
        // Providers see their socket close when netextd dies, and exit.
        crash()
        try? FileManager.default.removeItem(atPath: root)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
