import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// Starts a provider's code with its two sockets. netextd's launcher runs each provider as a
/// process of its own (`ProcessProviderLauncher`); NetExtTesting's runs it inside the test's
/// process, so the daemon's logic can be tested with real providers and no root.
public protocol ProviderLauncher: Sendable {
    /// Starts the provider behind `manifest` with `control` as its control socket (descriptor 3
    /// in a process) and `descriptors` as its descriptor-passing socket or flow channel
    /// (descriptor 4). The launcher owns both descriptors from then on: it closes them once the
    /// provider has them, or when the provider ends.
    func start(_ manifest: ProviderManifest, control: Int32, descriptors: Int32, environment: [String: String], isolateNetwork: Bool) throws(NetExtError) -> any ProviderExecution
}

/// A started provider's code: how to wait for its end and how to end it.
public protocol ProviderExecution: Sendable {
    /// Its process id (an in-process provider reports the process it runs in).
    var pid: Int32 { get }
    /// Waits for the end and returns a `waitpid` status. Called once.
    func waitForExit() async -> Int32
    /// Asks it to end (SIGTERM to a process).
    func requestEnd()
    /// Ends it now (SIGKILL to a process and its group).
    func forceEnd()
}

/// netextd's launcher: every provider is a process of its own, running as its manifest's user
/// (root only when the manifest says "root" and netextd is root), optionally in an empty network
/// namespace (a filter data provider).
public struct ProcessProviderLauncher: ProviderLauncher {
    public init() {}

    public func start(_ manifest: ProviderManifest, control: Int32, descriptors: Int32, environment: [String: String], isolateNetwork: Bool) throws(NetExtError) -> any ProviderExecution {
        defer {
            SocketPair.close(control)
            SocketPair.close(descriptors)
        }
        let user: UserDatabase.User?
        if getuid() != 0 {
            user = nil
        } else if let found = UserDatabase.user(named: manifest.user) {
            user = found.uid == 0 ? nil : found
        } else {
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)': user '\(manifest.user)' does not exist")
        }
        do {
            let pid = try ProcessSpawner.spawn(
                executable: manifest.executable, arguments: manifest.arguments, environment: environment, user: user,
                childSocket: control, secondSocket: descriptors, isolateNetwork: isolateNetwork)
            return ProcessExecution(pid: pid)
        } catch {
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)' could not be started: \(error)")
        }
    }
}

/// A provider process. Its exit is waited for on a dedicated thread, never on the cooperative
/// pool.
struct ProcessExecution: ProviderExecution {
    let pid: Int32

    func waitForExit() async -> Int32 {
        let pid = self.pid
        return await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: ProcessSpawner.waitForExit(pid: pid)) }
            thread.name = "netextd-wait-\(pid)"
            thread.start()
        }
    }

    func requestEnd() { ProcessSpawner.signal(SIGTERM, to: pid) }

    func forceEnd() {
        ProcessSpawner.signal(SIGKILL, to: -pid)
        ProcessSpawner.signal(SIGKILL, to: pid)
    }
}
