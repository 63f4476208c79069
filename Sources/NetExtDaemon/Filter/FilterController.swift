import Foundation
import Logging
import NetExtTransport
import NetExtCore
import NetExtIPC
import NetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// Runs the content filter while a content-filter configuration is enabled (Apple allows one
/// filter at a time; the configuration enabled last wins): the sandboxed data provider, the
/// control provider if the configuration names one, the netfilter queue and its engine, and
/// the steering rules. A crashed provider is restarted; meanwhile flows follow the
/// configuration's failure policy.
public actor FilterController {
    private struct Active {
        var configuration: Configuration
        var settings: ContentFilterProtocol
        var engine: FilterEngine
        var data: FilterProviderKeeper
        var control: FilterProviderKeeper?
        /// The steering rules in force (with the data provider's kernel rules, if any).
        var steering: FilterSteering
    }

    private let registry: ProviderRegistry
    private let logger: Logger
    private let rulesRoot: String
    private let queueNumber: UInt16
    private let verdictDeadline: Duration
    private let startDeadline: Duration
    /// The queue, DNS log, raw socket, steering rules and rules directory (the kernel's in
    /// netextd; NetExtTesting's `SimulatedFilterKernel` in tests).
    private let plumbing: any FilterPlumbing
    /// Launches and watches the data and control providers.
    private let providers: ProviderSupervisor
    private var active: Active?
    /// App messages relayed to the control provider, waiting for its reply.
    private var pendingMessages: [Int: CheckedContinuation<Result<Data?, NetExtError>, Never>] = [:]
    private var nextMessageID = 1
    /// How long the control provider has to answer an app message.
    static let messageDeadline: Duration = .seconds(5)

    /// `rulesRoot`: the directory under which each data provider gets its rules directory
    /// (`rulesRoot/<data provider's bundle identifier>`), writable only by the control provider.
    public init(
        registry: ProviderRegistry, logger: Logger, rulesRoot: String, queueNumber: UInt16 = 7100,
        verdictDeadline: Duration = .seconds(2), startDeadline: Duration = .seconds(15),
        launcher: any ProviderLauncher = ProcessProviderLauncher(), plumbing: any FilterPlumbing = KernelFilterPlumbing()
    ) {
        providers = ProviderSupervisor(launcher: launcher)
        self.plumbing = plumbing
        self.registry = registry
        self.logger = logger
        self.rulesRoot = rulesRoot
        self.queueNumber = queueNumber
        self.verdictDeadline = verdictDeadline
        self.startDeadline = startDeadline
    }

    /// At netextd start: removes rules a crashed netextd left, then starts the enabled filter.
    public func restore(_ configurations: [Configuration]) async {
        plumbing.removeSteering()
        if let enabled = configurations.last(where: { $0.isEnabled && $0.kind == .contentFilter }) {
            await configurationChanged(enabled, removed: false)
        }
    }

    /// Follows a saved or removed configuration.
    public func configurationChanged(_ configuration: Configuration, removed: Bool) async {
        guard case .contentFilter(let settings) = configuration.protocolConfiguration else { return }
        switch ActiveConfigurationChange(active: active?.configuration, incoming: configuration, removed: removed) {
        case .ignore: return
        case let .stop(reason):
            await deactivate(reason: reason)
            return
        case .refresh:
            active?.configuration = configuration
            return
        case let .start(stopping):
            if let stopping { await deactivate(reason: stopping) }
        }
        do throws(NetExtError) { try await activate(configuration, settings: settings) } catch {
            logger.error("content filter could not start", metadata: ["configuration": "\(configuration.id)", "error": "\(error)"])
        }
    }

    /// Stops the filter (daemon shutdown).
    public func stopAll() async {
        if active != nil { await deactivate(reason: .daemonShutdown) }
    }

    public func status() async -> FilterStatus {
        guard let active else { return FilterStatus(state: .off) }
        let ready = await active.data.isReady
        return FilterStatus(
            state: ready ? .running : .providerUnavailable, configurationID: active.configuration.id,
            name: active.configuration.localizedDescription, dataProvider: active.data.manifest.bundleIdentifier,
            controlProvider: active.control?.manifest.bundleIdentifier, failClosed: active.settings.failClosed,
            providerPID: await active.data.pid, controlProviderPID: await active.control?.pid,
            providerRestarts: await active.data.restarts, trackedFlows: active.engine.trackedFlows, counters: active.engine.counters,
            lastError: await active.data.lastError, verdictLatency: active.engine.verdictLatency)
    }

    public func log(limit: Int) -> [FilterLogEntry] {
        active?.engine.logEntries(limit: limit) ?? []
    }

    /// Relays an app message to the running filter's control provider and returns its reply
    /// (how `netext filter prompt` talks to the personal firewall).
    public func sendControlMessage(_ data: Data, to configuration: Configuration) async throws(NetExtError) -> Data? {
        guard let active, active.configuration.id == configuration.id else {
            throw NetExtError(.configurationDisabled, "'\(configuration.localizedDescription)' is not the running content filter; enable it first")
        }
        guard let control = active.control else {
            throw NetExtError(.configurationInvalid, "'\(configuration.localizedDescription)' has no control provider to send a message to")
        }
        let id = nextMessageID
        nextMessageID += 1
        let result = await withCheckedContinuation { (waiter: CheckedContinuation<Result<Data?, NetExtError>, Never>) in
            pendingMessages[id] = waiter
            Task {
                if await control.send(.appMessage(id: id, data: data)) == false {
                    self.finishMessage(id, .failure(NetExtError(.configurationDisabled, "the filter's control provider is not running")))
                }
                try? await Task.sleep(for: Self.messageDeadline)
                self.finishMessage(id, .failure(NetExtError(.timedOut, "the filter's control provider did not answer within \(Self.messageDeadline)")))
            }
        }
        return try result.get()
    }

    /// The data provider's kernel rules (`FilterSettings`): the steering is rebuilt with them in
    /// one step (no moment without rules), and the provider told whether it worked.
    private func applyFilterSettings(_ filterSettings: FilterSettings?, for configurationID: UUID) async {
        guard var current = active, current.configuration.id == configurationID else { return }
        let answer: ProviderMessage
        do throws(NetExtError) {
            try filterSettings?.validate()
            current.steering.settings = filterSettings
            try plumbing.updateSteering(current.steering)
            active?.steering = current.steering
            answer = .filterSettingsApplied
            logger.info("filter settings applied", metadata: [
                "rules": "\(filterSettings?.rules.count ?? 0)", "default": "\(filterSettings?.defaultAction.rawValue ?? "filterData")",
            ])
        } catch {
            answer = .filterSettingsRefused(error)
        }
        _ = await current.data.answer(answer)
    }

    private func finishMessage(_ id: Int, _ result: Result<Data?, NetExtError>) {
        pendingMessages.removeValue(forKey: id)?.resume(returning: result)
    }

    // MARK: Activation

    private func activate(_ configuration: Configuration, settings: ContentFilterProtocol) async throws(NetExtError) {
        guard !plumbing.needsRoot || getuid() == 0 else {
            throw NetExtError(.permissionDenied, "the content filter needs netextd to run as root (netfilter queue, provider sandbox)")
        }
        let dataManifest = try registry.manifest(for: settings.filterDataProviderBundleIdentifier, extensionPoint: .filterData)
        let controlManifest = try settings.filterControlProviderBundleIdentifier.map { identifier throws(NetExtError) in
            try registry.manifest(for: identifier, extensionPoint: .filterControl)
        }
        let controlUser = try controlManifest.map { manifest throws(NetExtError) in try Self.user(of: manifest) }
        if let controlManifest, controlManifest.user == dataManifest.user {
            throw NetExtError.invalid("the filter's control and data providers both run as '\(dataManifest.user)'; the data provider must not be able to write its rules (use another user for one of them)")
        }
        let rulesDirectory = "\(rulesRoot)/\(dataManifest.bundleIdentifier)"
        try plumbing.prepareRulesDirectory(rulesDirectory, under: rulesRoot, owner: controlUser ?? nil)
        let queue = try plumbing.openQueue(number: queueNumber, failOpen: !settings.failClosed)
        let injector: (any FilterPacketInjector)?
        do { injector = try plumbing.makeInjector() } catch {
            injector = nil
            logger.warning("no raw socket: blocked HTTP requests are reset instead of shown the block page", metadata: ["error": "\(error)"])
        }

        let start = ProviderStart(configuration: configuration, options: [:], password: nil)
        let environment = ["NETEXT_FILTER_RULES_DIR": rulesDirectory]
        let engineBox = EngineBox()
        let data = FilterProviderKeeper(
            role: .data, manifest: dataManifest, start: start, environment: environment, logger: logger, startDeadline: startDeadline,
            supervisor: providers,
            handle: { message in
                switch message {
                case .rulesApplied: engineBox.engine?.rulesApplied()
                case .applyFilterSettings(let filterSettings): await self.applyFilterSettings(filterSettings, for: configuration.id)
                default: break
                }
            },
            ended: { engineBox.engine?.failWaitingFlows() },
            verdict: { answer in
                switch answer {
                case .verdict(let flowID, let verdict): engineBox.engine?.newFlowVerdict(flowID: flowID, verdict: verdict)
                case .dataVerdict(let flowID, let side, let verdict): engineBox.engine?.dataVerdict(flowID: flowID, side: side, verdict: verdict)
                }
            })
        let control = controlManifest.map { manifest in
            FilterProviderKeeper(
                role: .control, manifest: manifest, start: start, environment: environment, logger: logger, startDeadline: startDeadline,
                supervisor: providers,
                handle: { message in
                    switch message {
                    case .controlVerdict(let flowID, let verdict):
                        engineBox.engine?.controlVerdict(flowID: flowID, verdict: verdict)
                        // updateRules means the rules were written: the data provider reloads,
                        // then its `rulesApplied` re-asks the waiting flows.
                        if verdict == .updateRules, await data.send(.rulesChanged) == false { engineBox.engine?.rulesApplied() }
                    case .rulesChanged:
                        // The data provider reloads first; its `rulesApplied` re-asks waiting flows.
                        if await data.send(.rulesChanged) == false { engineBox.engine?.rulesApplied() }
                    case .appMessageReply(let id, let reply):
                        await self.finishMessage(id, .success(reply))
                    default: break
                    }
                },
                ended: {})
        }
        let controlSlot = control?.current
        // DNS answers name the addresses of flows that carry no name of their own.
        let dnsLog: (any FilterDNSLog)?
        do { dnsLog = try plumbing.openDNSLog(group: queueNumber) } catch {
            dnsLog = nil
            logger.warning("no netfilter log: flows are judged without names from DNS answers", metadata: ["error": "\(error)"])
        }
        let engine = FilterEngine(
            queue: queue, dnsLog: dnsLog, failOpen: !settings.failClosed, deadline: verdictDeadline, logger: logger, injector: injector,
            blockPage: { flow, remediation in
                flow.url.map {
                    BlockPage(
                        organization: settings.organization, blockedURL: $0,
                        requestAccessText: remediation?.requestAccessText ?? settings.requestAccessText,
                        requestAccessURL: remediation?.requestAccessURL ?? settings.requestAccessURL)
                }
            },
            askControl: { flow in Self.send(.newFlow(flow), through: controlSlot) },
            ask: { flow in data.sendOnFlowChannel(.flow(flow)) },
            askData: { flowID, question in
                switch question {
                case .data(let side, let offset, let bytes): data.sendOnFlowChannel(.data(flowID: flowID, side: side, offset: offset, bytes: bytes))
                case .complete(let side): data.sendOnFlowChannel(.complete(flowID: flowID, side: side))
                }
            })
        engineBox.engine = engine
        engine.start()
        let exempt = controlUser.flatMap { $0.map { [$0.uid] } } ?? []
        let steeringRules = FilterSteering(
            queueNumber: queueNumber, failOpen: !settings.failClosed, exemptUIDs: exempt, dnsLogGroup: dnsLog.map { _ in queueNumber })
        active = Active(configuration: configuration, settings: settings, engine: engine, data: data, control: control, steering: steeringRules)
        do { try plumbing.installSteering(steeringRules) } catch {
            active = nil
            await engine.stop()
            throw error
        }
        logger.info("content filter enabled", metadata: [
            "configuration": "\(configuration.id)", "provider": "\(dataManifest.bundleIdentifier)",
            "control": "\(controlManifest?.bundleIdentifier ?? "none")",
            "queue": "\(queueNumber)", "policy": "\(settings.failClosed ? "fail closed" : "fail open")",
        ])
        await control?.launch()
        await data.launch()
    }

    /// Sends a message to a provider without waiting; false when it is not running.
    private static func send(_ message: ProviderMessage, through slot: FilterProviderKeeper.ProviderSlot?) -> Bool {
        guard let provider = slot?.get() else { return false }
        Task { try? await provider.send(message) }
        return true
    }

    private func deactivate(reason: ProviderStopReason) async {
        guard let stopping = active else { return }
        active = nil
        // Rules first: once they are gone no packet waits for netextd.
        plumbing.removeSteering()
        await stopping.engine.stop()
        await stopping.data.stop(reason: reason)
        await stopping.control?.stop(reason: reason)
        logger.info("content filter disabled", metadata: ["configuration": "\(stopping.configuration.id)", "reason": "\(reason.rawValue)"])
    }

    /// The user a manifest names (nil for root).
    private static func user(of manifest: ProviderManifest) throws(NetExtError) -> UserDatabase.User? {
        guard let user = UserDatabase.user(named: manifest.user) else {
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)': user '\(manifest.user)' does not exist")
        }
        return user.uid == 0 ? nil : user
    }
}

/// The engine, set once it exists, for the supervisors' message handlers.
private final class EngineBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: FilterEngine?
    var engine: FilterEngine? {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
