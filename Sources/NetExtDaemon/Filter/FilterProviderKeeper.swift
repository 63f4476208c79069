import Foundation
import Logging
import NetExtCore
import NetExtIPC
import NetExtLinux
import NIOFoundationCompat
import Synchronization

/// Keeps one filter provider (content filter data or control provider, or URL filter control
/// provider) running while its filter is on: runs it through the `ProviderSupervisor`
/// (sandboxed for a data provider), and after a crash, a failed start or a missed start
/// deadline launches it again with a backoff of 1 s doubling to 30 s. Messages other than the
/// lifecycle ones go to `handle`.
actor FilterProviderKeeper {
    enum Role: String, Sendable {
        case data = "filter data provider"
        case control = "filter control provider"
        case urlFilterControl = "URL filter control provider"
        case hotspotHelper = "hotspot helper"
    }

    let role: Role
    /// How each run is launched (a data provider sandboxed, with a flow channel).
    private let run: ProviderLaunch
    nonisolated var manifest: ProviderManifest { run.manifest }
    private let supervisor: ProviderSupervisor
    private let logger: Logger
    /// Called (on the supervisor) for every non-lifecycle message of the current provider.
    private let handle: @Sendable (ProviderMessage) async -> Void
    /// Called when the provider ended (flows waiting on it follow the failure policy).
    private let ended: @Sendable () async -> Void
    /// For a data provider: called on the channel's reading thread for each verdict.
    private let verdict: (@Sendable (FlowChannelCodec.FromProvider) -> Void)?
    private var provider: ProviderProcess?
    private var generation = 0
    private var stopped = false
    private(set) var isReady = false
    private(set) var restarts = 0
    private(set) var lastError: String?
    /// The ready provider, readable from any thread (the engine sends flows through it).
    nonisolated let current = ProviderSlot()

    /// A provider reference shared with non-isolated code.
    final class ProviderSlot: Sendable {
        private let value = Mutex<ProviderProcess?>(nil)
        func get() -> ProviderProcess? { value.withLock { $0 } }
        func set(_ provider: ProviderProcess?) { value.withLock { $0 = provider } }
    }

    init(
        role: Role, manifest: ProviderManifest, start: ProviderStart, environment: [String: String], logger: Logger, startDeadline: Duration,
        supervisor: ProviderSupervisor,
        handle: @escaping @Sendable (ProviderMessage) async -> Void, ended: @escaping @Sendable () async -> Void,
        verdict: (@Sendable (FlowChannelCodec.FromProvider) -> Void)? = nil
    ) {
        self.verdict = verdict
        self.supervisor = supervisor
        self.role = role
        run = ProviderLaunch(
            manifest: manifest, start: start, environment: environment, isolateNetwork: role == .data, flowChannel: role == .data,
            startDeadline: startDeadline)
        self.logger = logger
        self.handle = handle
        self.ended = ended
    }

    var pid: Int32? { provider?.pid }

    func launch() {
        guard !stopped else { return }
        generation += 1
        let generation = self.generation
        supervisor.run(
            run,
            adopt: { provider in
                guard await self.attach(provider, generation: generation) else { return false }
                if let verdict = self.verdict { Self.readVerdicts(from: provider, logger: self.logger, into: verdict) }
                return true
            },
            events: { event in await self.handle(event, generation: generation) })
    }

    private func handle(_ event: ProviderEvent, generation: Int) async {
        guard !stopped, generation == self.generation else { return }
        switch event {
        case .couldNotLaunch(let error):
            await providerEnded(generation: generation, how: "could not be started: \(error)")
        case .failed(let error):
            // The supervisor is ending it; the exit restarts it.
            lastError = error.description
            logger.error("\(role.rawValue) failed; restarting it", metadata: ["error": "\(error)"])
        case .message(let message):
            await received(message)
        case .exited(let status):
            await providerEnded(generation: generation, how: ProcessSpawner.describe(exitStatus: status))
        }
    }

    /// Reads the data provider's verdicts from its flow channel on a thread of its own until
    /// the provider closes it. A malformed message ends the provider (it is restarted).
    private nonisolated static func readVerdicts(
        from provider: ProviderProcess, logger: Logger, into deliver: @escaping @Sendable (FlowChannelCodec.FromProvider) -> Void
    ) {
        let thread = Thread {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FlowChannelCodec.maximumMessage, alignment: 8)
            defer { buffer.deallocate() }
            while true {
                let length: Int
                do { length = try SocketPair.receiveMessage(into: buffer, over: provider.flowChannel) } catch { return }
                if length == 0 { return }
                do {
                    deliver(try FlowChannelCodec.decodeFromProvider(UnsafeRawBufferPointer(rebasing: buffer[..<length])))
                } catch {
                    logger.error("filter data provider sent a malformed verdict; restarting it", metadata: ["error": "\(error)"])
                    provider.terminate(grace: .seconds(1))
                    return
                }
            }
        }
        thread.name = "netextd-filter-verdicts"
        thread.start()
    }

    /// Sends a flow, or data of a flow, to the ready data provider on its flow channel without
    /// blocking; false when there is no provider or it is not keeping up (the failure policy
    /// then decides).
    nonisolated func sendOnFlowChannel(_ message: FlowChannelCodec.ToProvider) -> Bool {
        guard let provider = current.get() else { return false }
        do { try SocketPair.sendMessage(FlowChannelCodec.encode(message), over: provider.flowChannel, wait: false) } catch { return false }
        return true
    }

    /// Stops the provider for good (the filter is going off).
    func stop(reason: ProviderStopReason) async {
        stopped = true
        isReady = false
        current.set(nil)
        if let provider {
            try? await provider.send(.stop(reason: reason))
            provider.terminate(patience: .seconds(2), grace: .seconds(2))
        }
        provider = nil
    }

    /// Answers a request of the current provider, ready or still starting (its `startFilter`
    /// may be waiting for the answer); false if there is none.
    func answer(_ message: ProviderMessage) async -> Bool {
        guard let provider else { return false }
        do { try await provider.send(message) } catch { return false }
        return true
    }

    /// Sends a message to the ready provider; false if there is none.
    func send(_ message: ProviderMessage) async -> Bool {
        guard isReady, let provider else { return false }
        do { try await provider.send(message) } catch { return false }
        return true
    }

    private func attach(_ provider: ProviderProcess, generation: Int) -> Bool {
        guard !stopped, generation == self.generation else { return false }
        self.provider = provider
        logger.info("\(role.rawValue) started", metadata: [
            "provider": "\(manifest.bundleIdentifier)", "pid": "\(provider.pid)", "user": "\(manifest.user)",
            "network": "\(role == .data ? "isolated" : "host")",
        ])
        return true
    }

    private func received(_ message: ProviderMessage) async {
        guard let provider else { return }
        switch message {
        case .started:
            isReady = true
            current.set(provider)
            logger.info("\(role.rawValue) ready", metadata: ["provider": "\(manifest.bundleIdentifier)"])
        case .failed(let error):
            lastError = error.description
            logger.error("\(role.rawValue) failed", metadata: ["error": "\(error)"])
            provider.terminate(grace: .seconds(1))
        case .rulesApplied where role == .data, .applyFilterSettings where role == .data,
             .controlVerdict where role == .control, .rulesChanged where role == .control, .appMessageReply where role == .control,
             .prefilterFetched where role == .urlFilterControl, .hotspotResponse where role == .hotspotHelper:
            await handle(message)
        case .stopped, .appMessageReply:
            break
        default:
            logger.error("\(role.rawValue) sent a message it may not send; restarting it", metadata: ["provider": "\(manifest.bundleIdentifier)"])
            provider.terminate(grace: .seconds(1))
        }
    }

    private func providerEnded(generation: Int, how: String) async {
        guard !stopped, generation == self.generation else { return }
        current.set(nil)
        isReady = false
        provider = nil
        restarts += 1
        lastError = "the \(role.rawValue) \(how)"
        await ended()
        launchAfterBackoff()
    }

    private func launchAfterBackoff() {
        generation += 1
        let delay = Duration.seconds(min(30, 1 << min(max(restarts - 1, 0), 5)))
        logger.error("\(role.rawValue) ended; restarting", metadata: ["how": "\(lastError ?? "?")", "in": "\(delay)", "restarts": "\(restarts)"])
        Task {
            try? await Task.sleep(for: delay)
            self.launch()
        }
    }
}
