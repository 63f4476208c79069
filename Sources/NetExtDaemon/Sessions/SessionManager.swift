import Foundation
import IKEv2VICI
import Logging
import NetExtCore
import NetExtIPC
import NetExtLinux
import NIOFoundationCompat

/// Owns the connection of every configuration: one `SessionStateMachine` each, the provider
/// process behind it, and the waiters of `start`. Performs the machine's actions.
public actor SessionManager {
    struct Session {
        var machine = SessionStateMachine()
        var configuration: Configuration
        var provider: ProviderProcess?
        /// Bumped on every launch so that events from an earlier provider are ignored.
        var generation = 0
        var pendingStart: ProviderStart?
        /// The provider to launch, looked up once when the start was requested.
        var pendingManifest: ProviderManifest?
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
        /// The TUN interface and applied plan, once the provider set network settings.
        var tunnel: TunnelInterface?
        /// A personal VPN's IKEv2 client (strongSwan's charon), instead of a provider process.
        var ikev2: IKEv2Client?
        /// The provider's latest report of its connection (endpoint, handshakes).
        var statistics: TunnelStatistics?
        /// A connected personal VPN as charon reported it (it has no plan of netextd's).
        var personalDetails: TunnelDetails?
        /// An app proxy's flow hand-over, while its provider runs.
        var proxy: AppProxyFlowDispatcher?
    }

    /// A session's TUN interface: netextd keeps a descriptor so the interface lives exactly as
    /// long as the session, and closes it on disconnect.
    struct TunnelInterface {
        var fd: Int32
        var name: String
        var slot: Int
        var plan: NetworkPlan?
        /// The settings' `tunnelRemoteAddress`: the endpoint shown when the provider reports none.
        var remoteAddress: String?
    }

    var sessions: [UUID: Session] = [:]
    /// Ended app proxies' teardown (steering, then listeners), awaited by `stop`.
    var proxyTeardowns: [UUID: Task<Void, Never>] = [:]
    /// Proxies failing closed (not running, `includeAllNetworks` on, still enabled): their
    /// steering and listeners kept, every flow refused, until the provider runs again or the
    /// configuration is disabled, removed or changed.
    var heldClosed: [UUID: AppProxyFlowDispatcher] = [:]
    /// When each held proxy's provider was last started again on demand.
    var onDemandRestarts: [UUID: ContinuousClock.Instant] = [:]
    /// The names behind app proxies' flows' addresses (read from the first proxy's start on).
    var proxyNames: ProxyDNSNames?
    /// Every configuration's kill switch and enforced routes.
    let killSwitch: KillSwitch
    /// Per-app routing: the apps' cgroups, marks and the table that steers their flows.
    let appSteering: AppSteeringController
    /// The most flows an app or transparent proxy's provider holds at once (`$NETEXT_PROXY_FLOW_LIMIT`).
    let proxyFlowLimit: Int
    /// Whether host rules hold DNS answers here (the real cgroup host): stale hold rules are removed at start.
    private let holdsDNSAnswers: Bool
    /// Apps' messages waiting for their provider's answer.
    private var appMessages = AppMessageRelay()
    /// How long a provider has to answer an app's message.
    public static let appMessageDeadline: Duration = .seconds(10)
    private let registry: ProviderRegistry
    /// Launches and watches providers: processes of their own (netextd), or in-process (tests).
    private let supervisor: ProviderSupervisor
    private let hub: NotificationHub
    let logger: Logger
    /// How long a provider has to say hello and finish `startTunnel`.
    let startDeadline: Duration
    /// How long a provider has to acknowledge a stop before it is terminated.
    private let stopDeadline: Duration
    /// Runs `ip` and `nft` off this actor, in order (see `NetworkWorker`).
    let network: NetworkWorker
    var applier: any NetworkApplier { network.applier }
    /// The resolver file and the DNS stub: each tunnel's DNS settings.
    let dns: DNSRouter
    /// The enabled DNS settings configuration netextd last tried to put in force, and why it
    /// failed if it did (`SessionManager+DNSSettings.swift`).
    var dnsSettingsAttempt: (id: UUID, name: String, problem: String?)?
    /// What the on-demand rules of DNS settings configurations last decided (true: Connect, in
    /// force; false: Disconnect); a configuration with rules and no decision yet stays out.
    var dnsOnDemandApplies: [UUID: Bool] = [:]
    /// Whether the attempted configuration is enabled but held out of force by its rules.
    var dnsSettingsPaused = false
    var usedSlots = Set<Int>()

    /// Routing tables and rule priorities netextd owns: table `firstTable + slot`, rules at
    /// `firstTable + 4·slot …+2`.
    public static let firstTable = 7100
    public static let slotCount = 64
    /// The last slot belongs to the personal VPN (one at a time, as on Apple's systems): its rule
    /// comes after every packet tunnel's, so an enterprise tunnel wins where both route a
    /// destination, and everything else still takes the personal VPN.
    public static let personalSlot = slotCount - 1
    /// Where the personal VPN's charon keeps its files (nil: personal VPNs cannot start).
    let ikev2Directory: String?
    /// Reads a secret from the store by reference (the IKEv2 shared secret).
    let secretLookup: (@Sendable (String) throws(NetExtError) -> String?)?

    public init(
        registry: ProviderRegistry, hub: NotificationHub, logger: Logger,
        applier: any NetworkApplier = IPCommandApplier(), resolver: ResolverConfiguration? = nil, resolvedLinkName: String? = nil,
        resolvedHoldFile: String? = nil, dnsStubAddress: SocketAddress? = nil,
        startDeadline: Duration = .seconds(30), stopDeadline: Duration = .seconds(5),
        ikev2Directory: String? = nil, secretLookup: (@Sendable (String) throws(NetExtError) -> String?)? = nil,
        launcher: any ProviderLauncher = ProcessProviderLauncher(),
        appCgroups: (any AppCgroupHost)? = nil, appCgroupProblem: String = "no cgroup v2 hierarchy was found", appLaunchRoot: String = "netext-apps",
        proxyFlowLimit: Int = DaemonSettings.defaultProxyFlowLimit
    ) {
        self.proxyFlowLimit = proxyFlowLimit
        supervisor = ProviderSupervisor(launcher: launcher)
        self.ikev2Directory = ikev2Directory
        self.secretLookup = secretLookup
        // Where systemd-resolved runs, it owns the file: the machine's DNS goes through its links.
        let machineResolver: (any MachineResolver)? = resolvedLinkName.map { ResolvedRegistration(linkName: $0, holdFile: resolvedHoldFile) } ?? resolver
        dns = DNSRouter(resolver: machineResolver, stubAddress: dnsStubAddress, logger: logger)
        self.registry = registry
        self.hub = hub
        self.logger = logger
        network = NetworkWorker(applier: applier)
        killSwitch = KillSwitch(network: network, logger: logger)
        appSteering = AppSteeringController(
            host: appCgroups, hostProblem: appCgroupProblem, launchRoot: appLaunchRoot, network: network, logger: logger,
            openTrigger: appCgroups == nil ? nil : AppFlowTrigger.opener, openResolver: appCgroups == nil ? nil : AppDomainResolver.opener(logger: logger),
            openDNSHold: appCgroups == nil ? nil : ProxyDNSHold.opener(logger: logger))
        holdsDNSAnswers = appCgroups != nil
        self.startDeadline = startDeadline
        self.stopDeadline = stopDeadline
    }

    /// Removes what a crashed netextd may have left: policy rules, routes, the resolver file.
    public func removeStaleState() async {
        await network.perform { applier in
            applier.removeStale(
                tables: FlowSteering.proxyTable...(Self.firstTable + Self.slotCount - 1),
                priorities: FlowSteering.proxyRulePriority...(Self.firstTable + 4 * Self.slotCount))
        }
        dns.resolver?.restore()
        // A crashed netextd's DNS hold (host rules): answers must not wait on a queue nobody reads.
        if holdsDNSAnswers { ProxyDNSHold.removeRules() }
        if let ikev2Directory { IKEv2Client.endLeftover(in: ikev2Directory + "/run") }
    }

    // MARK: Requests

    /// Starts a configuration's connection and waits until it is connected or has failed
    /// (at most the start deadline). `password` comes from the options or the secret store.
    public func start(_ configuration: Configuration, options: [String: JSONValue], password: String?) async throws(NetExtError) -> StatusInfo {
        // A relay configuration runs as a transparent proxy of the built-in relay provider, its
        // client identities handed over in the start options.
        var options = options
        if case .relay(let settings) = configuration.protocolConfiguration { options = try Self.relayStartOptions(settings, options: options, secret: secretLookup) }
        let configuration = Self.runnable(configuration)
        guard configuration.isEnabled else {
            throw .disabled("configuration '\(configuration.localizedDescription)' is not enabled; enable it first (`netext enable`)")
        }
        let manifest: ProviderManifest?
        switch configuration.protocolConfiguration {
        case .tunnelProvider(let settings):
            manifest = try registry.manifest(for: settings.providerBundleIdentifier, extensionPoint: settings.extensionPoint)
        case .personalVPN:
            guard ikev2Directory != nil else { throw .connectionFailed("this netextd has no directory for the IKEv2 client") }
            manifest = nil
            // One personal VPN at a time: starting another one ends the one that runs.
            for other in sessions.values where other.configuration.id != configuration.id && other.ikev2 != nil && other.machine.status.isActive {
                logger.info("personal VPN: another one starts; stopping this one", metadata: ["configuration": "\(other.configuration.localizedDescription)"])
                await stop(other.configuration, reason: .userInitiated)
            }
        default:
            throw .invalid("configuration '\(configuration.localizedDescription)' is a \(configuration.kind.rawValue) configuration; it has no VPN connection to start")
        }
        // The kill switch closes before the provider runs, and stays closed whatever happens to it.
        try await killSwitch.engage(configuration, manifest: manifest, apps: await appSteering.mark(for: configuration.id))
        var session = sessions[configuration.id] ?? Session(configuration: configuration)
        session.configuration = configuration
        session.pendingStart = ProviderStart(configuration: configuration, options: options, password: password)
        session.pendingManifest = manifest
        sessions[configuration.id] = session
        apply(.startRequested, to: configuration.id)
        await waitWhileConnecting(configuration.id)
        return statusInfo(for: configuration)
    }

    /// Stops a configuration's connection and waits until it is disconnected.
    @discardableResult
    public func stop(_ configuration: Configuration, reason: ProviderStopReason) async -> StatusInfo {
        let configuration = Self.runnable(configuration)
        if sessions[configuration.id] != nil {
            sessions[configuration.id]?.configuration = configuration
            apply(.stopRequested(reason), to: configuration.id)
            await waitUntilDisconnected(configuration.id)
            await awaitProxyTeardown(configuration.id)
        }
        return statusInfo(for: configuration)
    }

    /// Stops every connection (daemon shutdown), all at once; a provider that has not stopped
    /// within `patience` is terminated. Returns when their network settings are undone.
    public func stopAll(patience: Duration = .seconds(2.5)) async {
        let active = sessions.values.filter { $0.machine.status.isActive }.map(\.configuration)
        let stragglers = Task {
            try await Task.sleep(for: patience)
            self.terminateStragglers()
        }
        await withTaskGroup(of: Void.self) { group in
            for configuration in active { group.addTask { await self.stop(configuration, reason: .daemonShutdown) } }
        }
        stragglers.cancel()
        for id in Array(heldClosed.keys) { await releaseHeldClosed(id) }
        await endDNSSettings()
        await appSteering.shutdown()
        await network.drain()
    }

    private func terminateStragglers() {
        for session in sessions.values where session.machine.status.isActive {
            logger.warning("provider did not stop in time for shutdown; terminating", metadata: ["configuration": "\(LogText.quoted(session.configuration.localizedDescription))"])
            session.provider?.terminate(grace: .milliseconds(500))
            endIKEv2Client(of: session.configuration.id)
        }
    }

    /// The status of a configuration (`invalid` when it is not enabled and not connected).
    public func statusInfo(for configuration: Configuration) -> StatusInfo {
        let session = sessions[configuration.id]
        var status = session?.machine.status ?? .disconnected
        if status == .disconnected && !configuration.isEnabled { status = .invalid }
        // Traffic through the tunnel: the kernel's counters of the TUN interface (inner packets).
        let traffic = session?.tunnel.flatMap { TunDevice.traffic(of: $0.name) }
        var killSwitchOn: Bool?
        if case .tunnelProvider(let settings) = configuration.protocolConfiguration, settings.includeAllNetworks, configuration.isEnabled { killSwitchOn = true }
        return StatusInfo(
            id: configuration.id, name: configuration.localizedDescription, kind: configuration.kind,
            isEnabled: configuration.isEnabled, status: status,
            connectedDate: session?.machine.connectedDate,
            lastDisconnectError: session?.machine.lastDisconnectError,
            bytesIn: traffic?.received ?? 0, bytesOut: traffic?.sent ?? 0,
            proxy: status.isActive ? session?.tunnel?.plan?.proxy : nil, killSwitch: killSwitchOn,
            tunnel: status.isActive ? session.flatMap(Self.details) : nil)
    }

    /// The connected tunnel in detail: what netextd applied, and what the provider reported.
    static func details(of session: Session) -> TunnelDetails? {
        if session.ikev2 != nil { return session.personalDetails }
        guard let tunnel = session.tunnel, let plan = tunnel.plan else { return nil }
        let statistics = session.statistics
        return TunnelDetails(
            interface: tunnel.name, mtu: plan.mtu, addresses: plan.addresses.map(\.description),
            routes: plan.includedRoutes.map(\.description), dnsServers: plan.dns?.servers ?? [],
            matchDomains: plan.dns?.matchDomains ?? [], searchDomains: plan.dns?.searchDomains ?? [],
            endpoint: statistics?.endpoint ?? tunnel.remoteAddress, lastHandshake: statistics?.lastHandshake,
            rekeys: statistics.map(\.rekeys))
    }

    /// Reacts to a stored change: a configuration disabled or removed while active is stopped.
    public func configurationChanged(_ configuration: Configuration, removed: Bool) async {
        // A relay configuration is steered as what it runs as (per-app relays: an app proxy).
        await appSteering.update(
            Self.runnable(configuration), removed: removed, testApps: testAppMapping(of: configuration),
            bypassResolvers: Self.steersApps(configuration) ? bypassResolvers() : [])
        if removed || !configuration.isEnabled { await killSwitch.release(configuration.id) }
        if case .dnsSettings = configuration.protocolConfiguration { await dnsSettingsChanged(configuration, removed: removed) }
        let previous = sessions[configuration.id]?.configuration
        defer { if case .relay = configuration.protocolConfiguration { Task { await self.relayChanged(configuration, removed: removed, previous: previous) } } }
        guard var session = sessions[configuration.id] else { return }
        session.configuration = Self.runnable(configuration)
        sessions[configuration.id] = session
        if removed || !configuration.isEnabled, session.machine.status.isActive {
            await stop(configuration, reason: removed ? .configurationRemoved : .configurationDisabled)
        }
        // A proxy failing closed lets go once its configuration is disabled or removed, or no
        // longer asks for it.
        if removed || !configuration.isEnabled || !Self.failsClosed(configuration) { await releaseHeldClosed(configuration.id) }
        if removed, let ended = sessions[configuration.id], !ended.machine.status.isActive {
            sessions[configuration.id] = nil
        }
    }

    // MARK: The machine and its actions

    func apply(_ event: SessionStateMachine.Event, to id: UUID, generation: Int? = nil) {
        guard var session = sessions[id] else { return }
        if let generation, generation != session.generation { return }
        let actions = session.machine.handle(event)
        sessions[id] = session
        for action in actions { perform(action, for: id) }
    }

    private func perform(_ action: SessionStateMachine.Action, for id: UUID) {
        guard var session = sessions[id] else { return }
        switch action {
        case .launchProvider:
            session.generation += 1
            session.provider = nil
            session.statistics = nil
            session.personalDetails = nil
            sessions[id] = session
            launch(id: id, generation: session.generation)
        case .sendStop(let reason):
            let generation = session.generation
            if let client = session.ikev2 {
                // The server hears a DELETE; charon is then ended, so that nothing of it outlives
                // the stop (not even when netextd is shutting down).
                Thread.detachNewThread {
                    client.disconnect()
                    client.terminate()
                    Task { await self.apply(.providerStopped, to: id, generation: generation) }
                }
                return
            }
            if let provider = session.provider {
                Task { try? await provider.send(.stop(reason: reason)) }
            } else {
                // Not launched yet: the launch task sees the new state and gives up.
                apply(.providerExited("was stopped before it started"), to: id, generation: generation)
                return
            }
            Task { [stopDeadline] in
                try? await Task.sleep(for: stopDeadline)
                self.stopDeadlinePassed(id: id, generation: generation)
            }
        case .terminateProvider:
            // After a clean stop the provider exits by itself; after a failure it is ended now.
            let clean = session.machine.status == .disconnected && session.machine.lastDisconnectError == nil
            session.provider?.terminate(patience: clean ? .seconds(2) : .zero)
            session.provider = nil
            sessions[id] = session
            endIKEv2Client(of: id)
        case .publishStatus(let previous):
            if session.machine.status == .disconnected {
                removeTunnel(id: id)
                endProxying(id, failed: session.machine.lastDisconnectError != nil)
                endIKEv2Client(of: id)
            }
            let info = statusInfo(for: session.configuration)
            var metadata: Logger.Metadata = ["configuration": "\(session.configuration.localizedDescription)", "from": "\(previous.rawValue)", "to": "\(info.status.rawValue)"]
            if let error = info.lastDisconnectError { metadata["error"] = "\(error.description)" }
            logger.info("status changed", metadata: metadata)
            hub.statusChanged(previous: previous, current: info)
            // Waiters of start and stop are released once the connection has settled.
            if info.status != .connecting && info.status != .disconnecting {
                for waiter in session.waiters.values { waiter.resume() }
                sessions[id]?.waiters.removeAll()
            }
        }
    }

    private func launch(id: UUID, generation: Int) {
        guard let session = sessions[id], let start = session.pendingStart else { return }
        if case .personalVPN(let settings) = session.configuration.protocolConfiguration {
            launchIKEv2(settings, id: id, generation: generation, start: start)
            return
        }
        guard let manifest = session.pendingManifest else { return }
        supervisor.run(
            ProviderLaunch(manifest: manifest, start: start, flowChannel: manifest.extensionPoint.takesFlows, startDeadline: startDeadline),
            adopt: { provider in await self.attach(provider, to: id, generation: generation) },
            events: { event in await self.handle(event, id: id, generation: generation) })
    }

    /// Turns what happens to a session's provider into state-machine events.
    private func handle(_ event: ProviderEvent, id: UUID, generation: Int) async {
        switch event {
        case .couldNotLaunch(let error), .failed(let error):
            apply(.providerFailed(error), to: id, generation: generation)
        case .message(let message):
            guard let provider = sessions[id]?.provider, sessions[id]?.generation == generation else { return }
            await received(message, from: provider, id: id, generation: generation)
        case .exited(let status):
            providerExited(id: id, generation: generation, status: status)
        }
    }

    private func attach(_ provider: ProviderProcess, to id: UUID, generation: Int) -> Bool {
        guard var session = sessions[id], session.generation == generation, session.machine.status == .connecting else { return false }
        session.provider = provider
        sessions[id] = session
        logger.info("provider started", metadata: ["provider": "\(provider.manifest.bundleIdentifier)", "pid": "\(provider.pid)", "user": "\(provider.manifest.user)"])
        return true
    }

    private func received(_ message: ProviderMessage, from provider: ProviderProcess, id: UUID, generation: Int) async {
        switch message {
        case .setNetworkSettings(let settings):
            await applyNetworkSettings(settings, provider: provider, id: id, generation: generation)
        case .setTransparentProxySettings(let settings):
            await applyTransparentProxySettings(settings, provider: provider, id: id, generation: generation)
        case .reasserting(let value): apply(.providerReasserting(value), to: id, generation: generation)
        case .tunnelStatistics(let statistics):
            guard isCurrent(id, generation: generation) else { return }
            sessions[id]?.statistics = statistics
        case .appMessageReply(let messageID, let data):
            appMessages.reply(messageID, from: id, data: data)
        case .started:
            if provider.manifest.extensionPoint == .appProxy || provider.manifest.extensionPoint == .dnsProxy {
                do throws(NetExtError) { try await startProxying(id, provider: provider, generation: generation) } catch {
                    apply(.providerFailed(error), to: id, generation: generation)
                    return
                }
            }
            apply(.providerStarted, to: id, generation: generation)
        case .failed(let error): apply(.providerFailed(error), to: id, generation: generation)
        case .stopped: apply(.providerStopped, to: id, generation: generation)
        case .hello, .start, .stop, .networkSettingsApplied, .networkSettingsRefused, .appMessage, .newFlow, .controlVerdict, .rulesChanged, .rulesApplied, .fetchPrefilter, .prefilterFetched,
             .applyFilterSettings, .filterSettingsApplied, .filterSettingsRefused, .hotspotCommand, .hotspotResponse:
            apply(.providerFailed(NetExtError(.protocolError, "provider sent a daemon-only message")), to: id, generation: generation)
        }
    }

    func providerExited(id: UUID, generation: Int, status: Int32) {
        let how = ProcessSpawner.describe(exitStatus: status)
        appMessages.failAll(of: id, NetExtError(.providerFailed, "the provider exited (\(how)) before answering"))
        logger.info("provider exited", metadata: ["configuration": "\(sessions[id]?.configuration.localizedDescription ?? id.uuidString)", "how": "\(how)"])
        apply(.providerExited(how), to: id, generation: generation)
    }

    private func stopDeadlinePassed(id: UUID, generation: Int) {
        guard let session = sessions[id], session.generation == generation, session.machine.status == .disconnecting else { return }
        logger.warning("provider did not acknowledge stop; terminating", metadata: ["configuration": "\(id)"])
        session.provider?.terminate(grace: .seconds(1))
    }

    // MARK: Waiting

    private func waitWhileConnecting(_ id: UUID) async {
        guard sessions[id]?.machine.status == .connecting else { return }
        await wait(for: id)
    }

    private func waitUntilDisconnected(_ id: UUID) async {
        guard let status = sessions[id]?.machine.status, status == .disconnecting else { return }
        await wait(for: id)
    }

    private func wait(for id: UUID) async {
        let key = UUID()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            sessions[id]?.waiters[key] = continuation
        }
    }

    // MARK: DNS

    /// On-demand EvaluateConnection: while `observer` is set, every name programs resolve is
    /// reported to it (see `DNSRouter.watchResolvedNames`). nil stops watching.
    public func watchResolvedNames(_ observer: (@Sendable (String) -> Void)?) {
        dns.watchResolvedNames(observer)
    }

    // MARK: App messages

    /// Delivers an app's message to the configuration's running provider and waits for its
    /// answer (Apple's `sendProviderMessage`).
    public func sendProviderMessage(_ data: Data, to configuration: Configuration) async throws(NetExtError) -> Data? {
        guard let session = sessions[configuration.id], session.machine.status.isActive, let provider = session.provider else {
            throw NetExtError(.configurationDisabled, "'\(configuration.localizedDescription)' is not running; start it before sending its provider a message")
        }
        let deadline = Self.appMessageDeadline
        let result = await withCheckedContinuation { (waiter: AppMessageRelay.Waiter) in
            let messageID = appMessages.register(to: configuration.id, waiter: waiter)
            Task {
                do throws(NetExtError) { try await provider.send(.appMessage(id: messageID, data: data)) } catch {
                    self.finishAppMessage(messageID, .failure(error))
                }
                try? await Task.sleep(for: deadline)
                self.finishAppMessage(messageID, .failure(NetExtError(.timedOut, "the provider did not answer within \(deadline)")))
            }
        }
        return try result.get()
    }

    // MARK: Apps

    /// A per-app VPN's apps from its provider manifest's `testAppMapping` (Apple's
    /// `NETestAppMapping`, for development), keyed by the configuration's `VPNUUID`.
    func testAppMapping(of configuration: Configuration) -> [AppIdentifier] {
        guard case .tunnelProvider(let settings) = configuration.protocolConfiguration, let uuid = settings.perAppUUID,
              let manifest = try? registry.manifest(for: settings.providerBundleIdentifier, extensionPoint: settings.extensionPoint) else { return [] }
        let apps = manifest.testAppMapping[uuid] ?? []
        if !apps.isEmpty {
            logger.notice("per-app VPN: apps from the provider manifest's testAppMapping (development)", metadata: [
                "configuration": "\(LogText.quoted(configuration.localizedDescription))", "apps": "\(apps.map(\.rawValue))",
            ])
        }
        return apps
    }

    /// The bound apps of the configurations `isVisible` admits (`netext apps`).
    public func appStatuses(isVisible: @Sendable (Configuration) -> Bool) async -> [AppBindingStatus] {
        let connected = Set(sessions.filter { $0.value.machine.status == .connected }.map(\.key))
        return await appSteering.statuses(isVisible: isVisible, isConnected: { connected.contains($0) })
    }

    /// Whether `configuration` is a tunnel that excluded apps bypass (their DNS goes to the
    /// resolvers from before it).
    static func excludesApps(_ configuration: Configuration) -> Bool {
        guard case .tunnelProvider(let settings) = configuration.protocolConfiguration else { return false }
        return !settings.isPerApp && !settings.excludedAppRules.isEmpty
    }

    /// Whether `configuration` steers apps: excluded apps' DNS and domain-limited apps' other
    /// names go to the resolvers from before any tunnel.
    static func steersApps(_ configuration: Configuration) -> Bool {
        guard case .tunnelProvider(let settings) = configuration.protocolConfiguration else { return false }
        return excludesApps(configuration) || settings.appRules.contains { !$0.matchDomains.isEmpty }
    }

    /// The resolvers outside every tunnel (the resolver file as it was before netextd wrote it):
    /// where an excluded app's DNS queries go.
    func bypassResolvers() -> [String] {
        guard let resolver = dns.resolver else { return [] }
        return resolver.originalNameservers(excluding: dns.stubAddress?.hostText ?? "")
    }

    private func finishAppMessage(_ messageID: Int, _ result: Result<Data?, NetExtError>) {
        appMessages.finish(messageID, result)
    }

    // MARK: Kill switch and enforced routes

    /// At start: the guards of every enabled configuration that asks for one (see `KillSwitch`),
    /// and the per-app steering of every enabled tunnel with app rules.
    public func restoreGuards(_ configurations: [Configuration]) async {
        let testApps = Dictionary(configurations.map { ($0.id, testAppMapping(of: $0)) }, uniquingKeysWith: { first, _ in first })
        await appSteering.restore(
            configurations.map { Self.runnable($0) }, testApps: testApps, bypassResolvers: configurations.contains(where: Self.steersApps) ? bypassResolvers() : [])
        var apps: [UUID: FlowSteering.Marking] = [:]
        for configuration in configurations {
            apps[configuration.id] = await appSteering.mark(for: configuration.id)
        }
        let registry = self.registry
        await killSwitch.restore(configurations, apps: apps) { configuration in
            guard case .tunnelProvider(let settings) = configuration.protocolConfiguration else { return nil }
            return try? registry.manifest(for: settings.providerBundleIdentifier, extensionPoint: settings.extensionPoint)
        }
    }
}
