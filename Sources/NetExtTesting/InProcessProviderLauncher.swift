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

    /// - Parameter providers: bundle identifier → how to make that provider.
    public init(_ providers: [String: Factory]) {
        factories = providers
    }

    /// The bundle identifiers launched so far, oldest first (a restart appears twice).
    public var launches: [String] { launched.withLock { $0 } }

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
        let task = Task<Int32, Never> {
            do {
                switch factory {
                case .tunnel(let make):
                    try await ProviderHost.run(make(), bundleIdentifier: bundle, descriptor: connectionEnd, descriptorSocket: descriptors)
                case .filterData(let make):
                    try await ProviderHost.run(filter: make(), bundleIdentifier: bundle, descriptor: connectionEnd, descriptorSocket: descriptors)
                case .filterControl(let make):
                    try await ProviderHost.run(filterControl: make(), bundleIdentifier: bundle, descriptor: connectionEnd, descriptorSocket: descriptors)
                case .urlFilterControl(let make):
                    try await ProviderHost.run(urlFilterControl: make(), bundleIdentifier: bundle, descriptor: connectionEnd, descriptorSocket: descriptors)
                }
                return 0
            } catch {
                return 1 << 8  // a waitpid status: exited with status 1
            }
        }
        return InProcessExecution(task: task, control: control, descriptors: descriptors)
    }
}

/// A provider running as a task of the test's process.
final class InProcessExecution: ProviderExecution {
    private let task: Task<Int32, Never>
    private let control: Int32
    private let descriptors: Int32
    private let ended = Mutex(false)

    init(task: Task<Int32, Never>, control: Int32, descriptors: Int32) {
        self.task = task
        self.control = control
        self.descriptors = descriptors
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
