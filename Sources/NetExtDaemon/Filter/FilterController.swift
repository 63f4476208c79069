import Foundation
import Logging
import NetExt
import NetExtCore
import NetExtIPC
import NetExtLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs the content filter while a content-filter configuration is enabled (Apple allows one
/// filter at a time; the configuration enabled last wins): the sandboxed data provider, the
/// netfilter queue and its engine, and the steering rules. Restarts a crashed provider with
/// backoff; meanwhile flows follow the configuration's failure policy.
public actor FilterController {
    private struct Active {
        var configuration: Configuration
        var settings: ContentFilterProtocol
        var manifest: ProviderManifest
        var engine: FilterEngine
        var provider: ProviderProcess?
        var generation = 0
        var restarts = 0
        var providerReady = false
        var lastError: String?
    }

    private let registry: ProviderRegistry
    private let logger: Logger
    private let rulesRoot: String
    private let queueNumber: UInt16
    private let verdictDeadline: Duration
    private let startDeadline: Duration
    private let steering = FilterSteeringApplier()
    private var active: Active?
    /// Generations count across activations, so a provider of an earlier activation is never
    /// taken for the current one.
    private var lastGeneration = 0
    /// The provider flows are sent to, read by the engine's thread.
    private let currentProvider = ProviderSlot()

    /// The provider flows are sent to, shared with the engine's thread.
    private final class ProviderSlot: Sendable {
        private let value = Mutex<ProviderProcess?>(nil)
        func withLock<Result>(_ body: (inout ProviderProcess?) -> Result) -> Result { value.withLock { body(&$0) } }
    }

    /// `rulesRoot`: the directory under which each data provider gets its read-only rules
    /// directory (`rulesRoot/<bundle identifier>`).
    public init(
        registry: ProviderRegistry, logger: Logger, rulesRoot: String, queueNumber: UInt16 = 7100,
        verdictDeadline: Duration = .seconds(2), startDeadline: Duration = .seconds(15)
    ) {
        self.registry = registry
        self.logger = logger
        self.rulesRoot = rulesRoot
        self.queueNumber = queueNumber
        self.verdictDeadline = verdictDeadline
        self.startDeadline = startDeadline
    }

    /// At netextd start: removes rules a crashed netextd left, then starts the enabled filter.
    public func restore(_ configurations: [Configuration]) async {
        steering.remove()
        if let enabled = configurations.last(where: { $0.isEnabled && $0.kind == .contentFilter }) {
            await configurationChanged(enabled, removed: false)
        }
    }

    /// Follows a saved or removed configuration.
    public func configurationChanged(_ configuration: Configuration, removed: Bool) async {
        guard case .contentFilter(let settings) = configuration.protocolConfiguration else { return }
        let isActive = active?.configuration.id == configuration.id
        if removed || !configuration.isEnabled {
            if isActive { await deactivate(reason: removed ? .configurationRemoved : .configurationDisabled) }
            return
        }
        if isActive, active?.configuration.protocolConfiguration == configuration.protocolConfiguration {
            active?.configuration = configuration
            return
        }
        if active != nil { await deactivate(reason: .superceded) }
        do throws(NetExtError) { try await activate(configuration, settings: settings) } catch {
            logger.error("content filter could not start", metadata: ["configuration": "\(configuration.id)", "error": "\(error)"])
        }
    }

    /// Stops the filter (daemon shutdown).
    public func stopAll() async {
        if active != nil { await deactivate(reason: .daemonShutdown) }
    }

    public func status() -> FilterStatus {
        guard let active else { return FilterStatus(state: .off) }
        return FilterStatus(
            state: active.providerReady ? .running : .providerUnavailable, configurationID: active.configuration.id,
            name: active.configuration.localizedDescription, dataProvider: active.manifest.bundleIdentifier,
            failClosed: active.settings.failClosed, providerPID: active.provider?.pid, providerRestarts: active.restarts,
            trackedFlows: active.engine.trackedFlows, counters: active.engine.counters, lastError: active.lastError)
    }

    public func log(limit: Int) -> [FilterLogEntry] {
        active?.engine.logEntries(limit: limit) ?? []
    }

    // MARK: Activation

    private func activate(_ configuration: Configuration, settings: ContentFilterProtocol) async throws(NetExtError) {
        guard getuid() == 0 else {
            throw NetExtError(.permissionDenied, "the content filter needs netextd to run as root (netfilter queue, provider sandbox)")
        }
        let manifest = try registry.manifest(for: settings.filterDataProviderBundleIdentifier, extensionPoint: .filterData)
        try prepareRulesDirectory(for: manifest)
        let queue: NetfilterQueue
        do { queue = try NetfilterQueue(number: queueNumber, failOpen: !settings.failClosed) } catch {
            throw NetExtError(.connectionFailed, "cannot bind netfilter queue \(queueNumber): \(error)")
        }
        let providerSlot = currentProvider
        let injector: RawPacketSender?
        do { injector = try RawPacketSender() } catch {
            injector = nil
            logger.warning("no raw socket: blocked HTTP requests are reset instead of shown the block page", metadata: ["error": "\(error)"])
        }
        let engine = FilterEngine(
            queue: queue, failOpen: !settings.failClosed, deadline: verdictDeadline, logger: logger, injector: injector,
            blockPage: { flow in
                flow.url.map { BlockPage(organization: settings.organization, blockedURL: $0, requestAccessText: settings.requestAccessText, requestAccessURL: settings.requestAccessURL) }
            }
        ) { flow in
            guard let provider = providerSlot.withLock({ $0 }) else { return false }
            Task { try? await provider.send(.newFlow(flow)) }
            return true
        }
        engine.start()
        lastGeneration += 1
        active = Active(configuration: configuration, settings: settings, manifest: manifest, engine: engine, generation: lastGeneration)
        do { try steering.apply(FilterSteering(queueNumber: queueNumber, failOpen: !settings.failClosed)) } catch {
            active = nil
            await engine.stop()
            throw error
        }
        logger.info("content filter enabled", metadata: [
            "configuration": "\(configuration.id)", "provider": "\(manifest.bundleIdentifier)",
            "queue": "\(queueNumber)", "policy": "\(settings.failClosed ? "fail closed" : "fail open")",
        ])
        launchProvider(generation: lastGeneration)
    }

    private func deactivate(reason: ProviderMessage.StopReason) async {
        guard let stopping = active else { return }
        active = nil
        currentProvider.withLock { $0 = nil }
        // Rules first: once they are gone no packet waits for netextd.
        steering.remove()
        await stopping.engine.stop()
        if let provider = stopping.provider {
            try? await provider.send(.stop(reason: reason))
            provider.terminate(patience: .seconds(2), grace: .seconds(2))
        }
        logger.info("content filter disabled", metadata: ["configuration": "\(stopping.configuration.id)", "reason": "\(reason.rawValue)"])
    }

    /// The data provider's rules directory: owned by root, readable by everyone, so the
    /// unprivileged provider reads it and cannot change it.
    private func prepareRulesDirectory(for manifest: ProviderManifest) throws(NetExtError) {
        do {
            try FileManager.default.createDirectory(atPath: rulesDirectory(for: manifest), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: rulesRoot)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: rulesDirectory(for: manifest))
        } catch {
            throw NetExtError.readWrite("cannot prepare the filter rules directory under \(rulesRoot): \(error.localizedDescription)")
        }
    }

    private func rulesDirectory(for manifest: ProviderManifest) -> String {
        "\(rulesRoot)/\(manifest.bundleIdentifier)"
    }

    // MARK: The provider

    private func launchProvider(generation: Int) {
        guard let current = active, current.generation == generation else { return }
        let manifest = current.manifest
        let start = ProviderStart(configuration: current.configuration, options: [:], password: nil)
        let environment = ["NETEXT_FILTER_RULES_DIR": rulesDirectory(for: manifest)]
        Task {
            let provider: ProviderProcess
            do throws(NetExtError) {
                provider = try await ProviderProcess.launch(manifest, isolateNetwork: true, environment: environment)
            } catch {
                self.providerEnded(generation: generation, how: "could not be started: \(error)")
                return
            }
            guard self.attach(provider, generation: generation) else {
                provider.terminate()
                return
            }
            Task {
                let status = await provider.waitForExit()
                self.providerEnded(generation: generation, how: ProcessSpawner.describe(exitStatus: status))
            }
            let decoder = ControlProtocol.makeDecoder()
            for await frame in provider.connection.frames {
                guard let message = try? decoder.decode(ProviderMessage.self, from: Data(frame)) else {
                    self.logger.error("filter provider sent a malformed message; restarting it", metadata: ["provider": "\(manifest.bundleIdentifier)"])
                    provider.terminate(grace: .seconds(1))
                    return
                }
                await self.received(message, from: provider, generation: generation, start: start)
            }
        }
        Task { [startDeadline] in
            try? await Task.sleep(for: startDeadline)
            self.startDeadlinePassed(generation: generation)
        }
    }

    private func attach(_ provider: ProviderProcess, generation: Int) -> Bool {
        guard var current = active, current.generation == generation else { return false }
        current.provider = provider
        active = current
        logger.info("filter provider started", metadata: ["provider": "\(provider.manifest.bundleIdentifier)", "pid": "\(provider.pid)", "user": "\(provider.manifest.user)", "network": "isolated"])
        return true
    }

    private func received(_ message: ProviderMessage, from provider: ProviderProcess, generation: Int, start: ProviderStart) async {
        guard let current = active, current.generation == generation else { return }
        switch message {
        case .hello(let bundleIdentifier, let version):
            guard bundleIdentifier == provider.manifest.bundleIdentifier, version == ControlProtocol.version else {
                logger.error("filter provider said hello under another name or protocol", metadata: ["said": "\(bundleIdentifier)", "version": "\(version)"])
                provider.terminate(grace: .seconds(1))
                return
            }
            try? await provider.send(.start(start))
        case .started:
            active?.providerReady = true
            currentProvider.withLock { $0 = provider }
            logger.info("filter provider ready", metadata: ["provider": "\(provider.manifest.bundleIdentifier)"])
        case .failed(let error):
            active?.lastError = error.description
            logger.error("filter provider failed", metadata: ["error": "\(error)"])
            provider.terminate(grace: .seconds(1))
        case .flowVerdict(let flowID, let verdict):
            current.engine.deliver(flowID: flowID, verdict: verdict, reason: .provider)
        case .stopped, .appMessageReply:
            break
        case .start, .stop, .setNetworkSettings, .networkSettingsApplied, .networkSettingsRefused, .reasserting, .appMessage, .newFlow:
            logger.error("filter provider sent a message it may not send; restarting it", metadata: ["provider": "\(provider.manifest.bundleIdentifier)"])
            provider.terminate(grace: .seconds(1))
        }
    }

    private func startDeadlinePassed(generation: Int) {
        guard let current = active, current.generation == generation, !current.providerReady else { return }
        logger.error("filter provider did not start in time; restarting it", metadata: ["deadline": "\(startDeadline)"])
        current.provider?.terminate(grace: .seconds(1))
    }

    /// The provider exited (or never started): flows waiting for it follow the failure policy,
    /// and a new one is launched after a backoff of 1 s doubling up to 30 s.
    private func providerEnded(generation: Int, how: String) {
        guard var current = active, current.generation == generation else { return }
        currentProvider.withLock { $0 = nil }
        current.engine.failWaitingFlows()
        current.provider = nil
        current.providerReady = false
        lastGeneration += 1
        current.generation = lastGeneration
        current.restarts += 1
        current.lastError = "the data provider \(how)"
        active = current
        let delay = Duration.seconds(min(30, 1 << min(current.restarts - 1, 5)))
        logger.error("filter provider ended; restarting", metadata: ["how": "\(how)", "in": "\(delay)", "restarts": "\(current.restarts)"])
        let next = current.generation
        Task {
            try? await Task.sleep(for: delay)
            self.launchProvider(generation: next)
        }
    }
}
