import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux
import NIOFoundationCompat
import Synchronization

/// What happens to one run of a provider, in order, as its owner sees it.
public enum ProviderEvent: Sendable {
    /// The provider could not be launched. Nothing follows.
    case couldNotLaunch(NetExtError)
    /// A message of the provider after its hello was accepted and `start` sent, in the order sent.
    case message(ProviderMessage)
    /// The provider broke the protocol (a malformed message, a wrong or second hello) or did not
    /// settle its start (`started`, `failed` or `stopped`) before the start deadline. The
    /// supervisor has begun ending it; `exited` follows.
    case failed(NetExtError)
    /// The provider ended, with its `waitpid` status. Delivered after its last message (the
    /// reader reached the end of the connection, or a second passed: a grandchild may hold the
    /// socket open). Nothing follows.
    case exited(status: Int32)
}

/// How to launch a provider and what to tell it.
public struct ProviderLaunch: Sendable {
    public var manifest: ProviderManifest
    /// Sent once the provider's hello names its manifest's bundle identifier and our protocol.
    public var start: ProviderStart
    public var environment: [String: String]
    /// Run it in an empty network namespace (a filter data provider).
    public var isolateNetwork: Bool
    /// Descriptor 4 is a flow channel (`FlowChannelCodec`) instead of a descriptor-passing socket.
    public var flowChannel: Bool
    /// How long it has from launch to `started` (or `failed`/`stopped`).
    public var startDeadline: Duration

    public init(
        manifest: ProviderManifest, start: ProviderStart, environment: [String: String] = [:], isolateNetwork: Bool = false,
        flowChannel: Bool = false, startDeadline: Duration
    ) {
        self.manifest = manifest
        self.start = start
        self.environment = environment
        self.isolateNetwork = isolateNetwork
        self.flowChannel = flowChannel
        self.startDeadline = startDeadline
    }
}

/// Launches and watches every kind of provider (packet tunnels for the session manager, filter
/// data and control providers, URL filter control providers) the same way: launch through a
/// `ProviderLauncher`, check the hello, send `start`, hand over every further message in
/// order, end a provider that breaks the protocol or misses its start deadline, and report its
/// exit after its last message. What to do with the messages, and whether to launch again, is
/// the owner's.
public struct ProviderSupervisor: Sendable {
    public let launcher: any ProviderLauncher
    /// How long the exit waits for the reader to reach the end of the connection.
    static let lastWordPatience: Duration = .seconds(1)

    public init(launcher: any ProviderLauncher = ProcessProviderLauncher()) {
        self.launcher = launcher
    }

    /// Starts one run and returns at once. `adopt` is asked first, with the launched provider:
    /// false (the owner no longer wants it, e.g. a stop came first) ends it quietly, with no
    /// events. Otherwise `events` gets the run's events, awaited one at a time for messages.
    public func run(
        _ launch: ProviderLaunch, adopt: @escaping @Sendable (ProviderProcess) async -> Bool,
        events: @escaping @Sendable (ProviderEvent) async -> Void
    ) {
        let launcher = self.launcher
        Task {
            let provider: ProviderProcess
            do throws(NetExtError) {
                provider = try await ProviderProcess.launch(
                    launch.manifest, isolateNetwork: launch.isolateNetwork, flowChannel: launch.flowChannel, environment: launch.environment,
                    launcher: launcher)
            } catch {
                await events(.couldNotLaunch(error))
                return
            }
            guard await adopt(provider) else {
                provider.terminate()
                return
            }
            await Self.watch(provider, launch: launch, events: events)
        }
    }

    private static func watch(_ provider: ProviderProcess, launch: ProviderLaunch, events: @escaping @Sendable (ProviderEvent) async -> Void) async {
        let progress = RunProgress()
        let readerDone = CompletionFlag()
        let bundle = launch.manifest.bundleIdentifier
        Task {
            let status = await provider.waitForExit()
            progress.exited()
            await readerDone.wait(atMost: lastWordPatience)
            await events(.exited(status: status))
        }
        Task {
            try? await Task.sleep(for: launch.startDeadline)
            guard progress.startIsPending else { return }
            provider.terminate(grace: .seconds(1))
            await events(.failed(NetExtError(.timedOut, "provider '\(bundle)' did not finish starting within \(launch.startDeadline)")))
        }
        defer { readerDone.set() }
        let decoder = ControlProtocol.makeDecoder()
        var greeted = false
        for await frame in provider.connection.frames {
            let violation: String?
            switch (try? decoder.decode(ProviderMessage.self, from: frame), greeted) {
            case (nil, _):
                violation = "sent a malformed message"
            case (.hello(let name, let version)?, false):
                if name == bundle, version == ControlProtocol.version {
                    greeted = true
                    violation = nil
                    do { try await provider.send(.start(launch.start)) } catch {
                        progress.settled()
                        await events(.failed(error))
                        return
                    }
                } else {
                    violation = "said hello as '\(name)' (protocol \(version)); expected '\(bundle)' (protocol \(ControlProtocol.version))"
                }
            case (.hello?, true):
                violation = "said hello twice"
            case (_?, false):
                violation = "sent a message before its hello"
            case (let message?, true):
                violation = nil
                switch message {
                case .started, .failed, .stopped: progress.settled()
                default: break
                }
                await events(.message(message))
            }
            if let violation {
                progress.settled()
                provider.terminate(grace: .seconds(1))
                await events(.failed(NetExtError(.protocolError, "provider '\(bundle)' \(violation)")))
                return
            }
        }
    }
}

/// Where one run is: whether its start is still pending, for the start deadline.
private final class RunProgress: Sendable {
    private struct State {
        var settled = false
        var exited = false
    }
    private let state = Mutex(State())

    func settled() { state.withLock { $0.settled = true } }
    func exited() { state.withLock { $0.exited = true } }
    var startIsPending: Bool { state.withLock { !$0.settled && !$0.exited } }
}
