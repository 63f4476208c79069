import Foundation
import NetExt
import NetExtCore
import NetExtDaemon
import NetExtIPC
import NetExtLinux
import Synchronization

/// Runs providers inside the test's own process instead of as processes of their own: the same
/// provider code, `ProviderHost` and protocol as in production, over socketpairs, with no root
/// and no executable. Give a `SessionManager` (or netextd's other supervisors) this launcher to
/// test what the daemon does with a provider that connects, fails, crashes or ignores a stop.
///
/// What a process would have that this cannot: an own user, an own network namespace
/// (`isolateNetwork` is ignored), and signals. Ending it closes its control socket, which the
/// provider sees as netextd going away; it then "exits" with status 1.
public final class InProcessProviderLauncher: ProviderLauncher {
    /// Makes a fresh provider for each launch.
    public enum Factory: Sendable {
        case tunnel(@Sendable () -> any TunnelProvider)
        case filterData(@Sendable () -> any FilterDataProvider)
        case filterControl(@Sendable () -> any FilterControlProvider)
        case urlFilterControl(@Sendable () -> any URLFilterControlProvider)
    }

    private let factories: [String: Factory]
    private let launched = Mutex<[String]>([])
    /// The latest execution of each bundle identifier, for `crash(_:)`.
    private let running = Mutex<[String: InProcessExecution]>([:])

    /// - Parameter providers: bundle identifier → how to make that provider.
    public init(_ providers: [String: Factory]) {
        factories = providers
    }

    /// The bundle identifiers launched so far, oldest first (a restart appears twice).
    public var launches: [String] { launched.withLock { $0 } }

    /// Ends the latest provider of `bundleIdentifier` the way a crash would look to netextd: its
    /// control socket closes without a word. A process's exit would also end its threads and
    /// sockets; here a tunnel provider's `stopTunnel(reason: .providerFailed)` is called in its
    /// place so that it lets go of them. Returns false if that provider is not running.
    @discardableResult
    public func crash(_ bundleIdentifier: String) -> Bool {
        guard let execution = running.withLock({ $0[bundleIdentifier] }), !execution.hasEnded else { return false }
        execution.crash()
        return true
    }

    public func start(_ manifest: ProviderManifest, control: Int32, descriptors: Int32, environment: [String: String], isolateNetwork: Bool) throws(NetExtError) -> any ProviderExecution {
        guard let factory = factories[manifest.bundleIdentifier] else {
            SocketPair.close(control)
            SocketPair.close(descriptors)
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)' could not be started: the in-process launcher has no provider of that bundle identifier")
        }
        // The provider's connection owns a duplicate of the control socket; the original stays
        // here, so ending the provider (shutdown) never reaches a descriptor number reused after
        // the connection closed its own.
        let connectionEnd = dup(control)
        guard connectionEnd >= 0 else {
            SocketPair.close(control)
            SocketPair.close(descriptors)
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)': cannot duplicate its socket (errno \(errno))")
        }
        launched.withLock { $0.append(manifest.bundleIdentifier) }
        let bundle = manifest.bundleIdentifier
        // A tunnel provider is made here so that a crash can tell it to let go of its resources.
        var tunnel: (any TunnelProvider)?
        if case .tunnel(let make) = factory { tunnel = make() }
        let task = Task<Int32, Never> { [tunnel] in
            do {
                switch factory {
                case .tunnel:
                    try await ProviderHost.run(tunnel!, bundleIdentifier: bundle, descriptor: connectionEnd, descriptorSocket: descriptors)
                case .filterData(let make):
                    try await ProviderHost.run(filter: make(), bundleIdentifier: bundle, descriptor: connectionEnd, descriptorSocket: descriptors)
                case .filterControl(let make):
                    try await ProviderHost.run(filterControl: make(), bundleIdentifier: bundle, descriptor: connectionEnd, descriptorSocket: descriptors)
                case .urlFilterControl(let make):
                    try await ProviderHost.run(urlFilterControl: make(), bundleIdentifier: bundle, descriptor: connectionEnd, descriptorSocket: descriptors)
                }
                return 0
            } catch {
                // What a provider process would print before exiting with status 1.
                FileHandle.standardError.write(Data("in-process provider \(bundle): \(error)\n".utf8))
                return 1 << 8  // a waitpid status: exited with status 1
            }
        }
        let execution = InProcessExecution(task: task, control: control, descriptors: descriptors, tunnel: tunnel)
        running.withLock { $0[bundle] = execution }
        return execution
    }
}

/// A provider running as a task of the test's process.
final class InProcessExecution: ProviderExecution {
    private let task: Task<Int32, Never>
    private let control: Int32
    private let descriptors: Int32
    private let ended = Mutex(false)
    private let tunnel: (any TunnelProvider)?

    init(task: Task<Int32, Never>, control: Int32, descriptors: Int32, tunnel: (any TunnelProvider)?) {
        self.task = task
        self.control = control
        self.descriptors = descriptors
        self.tunnel = tunnel
    }

    var hasEnded: Bool { ended.withLock { $0 } }

    /// Closes the provider's sockets unannounced, then has a tunnel provider release what its
    /// process's exit would have released.
    func crash() {
        requestEnd()
        if let tunnel {
            Task.detached { await tunnel.stopTunnel(reason: .providerFailed) }
        }
    }

    var pid: Int32 { getpid() }

    func waitForExit() async -> Int32 {
        let status = await task.value
        ended.withLock { done in
            guard !done else { return }
            done = true
            SocketPair.close(control)
            SocketPair.close(descriptors)
        }
        return status
    }

    func requestEnd() {
        ended.withLock { done in
            guard !done else { return }
            SocketPair.shutdown(control)
            SocketPair.shutdown(descriptors)
        }
    }

    func forceEnd() {
        requestEnd()
        task.cancel()
    }
}
