import Foundation
import Logging
import NetExtCore
import NetExtLinux
import NetExtIPC

/// Connect on demand: for every enabled configuration with `isOnDemandEnabled`, the rules are
/// evaluated (first match wins) whenever the kernel reports a network change and every few
/// seconds; Connect starts the VPN (retrying failures with exponential backoff, 1 s to 60 s),
/// Disconnect stops it, Ignore and no match leave it as it is. A provider that crashed is thus
/// restarted while the rules want the VPN. A user's explicit stop turns on-demand off (see
/// `ControlService`), as on Apple's systems.
public actor OnDemandController {
    private let store: ConfigurationStore
    private let sessions: SessionManager
    private let observer: any NetworkObserving
    private let logger: Logger
    private let password: @Sendable (Configuration) throws -> String?
    private var failures: [UUID: (count: Int, notBefore: Date)] = [:]
    private var connecting: Set<UUID> = []
    private var lastDecision: [UUID: String] = [:]
    private var evaluating = false
    /// Why the rules are to be evaluated again once the evaluation under way ends (the latest
    /// request's reason: the one the new round answers).
    private var evaluateAgain: String?
    private var running = true
    /// Configurations whose matching rule is EvaluateConnection: their connection rules.
    private var watchedNames: [UUID: (configuration: Configuration, rules: [EvaluateConnectionRule])] = [:]

    /// How often the rules are evaluated without a kernel event (resolver changes, probes, crashed providers).
    public static let period: Duration = .seconds(3)
    public static let maximumBackoff: TimeInterval = 60

    public init(store: ConfigurationStore, sessions: SessionManager, observer: any NetworkObserving, logger: Logger,
                password: @escaping @Sendable (Configuration) throws -> String?) {
        self.store = store
        self.sessions = sessions
        self.observer = observer
        self.logger = logger
        self.password = password
    }

    public func start() {
        observer.start { [weak self] in Task { await self?.evaluate(reason: "network change") } }
        Task { [weak self] in
            while let self, await self.isRunning {
                try? await Task.sleep(for: Self.period)
                await self.evaluate(reason: "periodic")
            }
        }
    }

    /// Stops evaluating; a DNS stub kept for EvaluateConnection is closed and the resolver file
    /// restored.
    public func stop() async {
        running = false
        observer.stop()
        watchedNames = [:]
        await sessions.watchResolvedNames(nil)
    }

    var isRunning: Bool { running }

    /// Evaluates every on-demand configuration now (coalescing overlapping requests).
    public func evaluate(reason: String) async {
        guard !evaluating else {
            evaluateAgain = reason
            return
        }
        evaluating = true
        defer { evaluating = false }
        var next: String? = reason
        while let current = next {
            evaluateAgain = nil
            await evaluateOnce(reason: current)
            next = evaluateAgain
        }
    }

    /// The network began to let traffic through (a captive portal's login, by a hotspot helper
    /// or a person): the connect failures' backoff is forgotten and the rules evaluated now, so
    /// an on-demand VPN held by the portal connects at once rather than at its next retry.
    public func networkOpened(reason: String) async {
        failures = [:]
        await evaluate(reason: reason)
    }

    private func evaluateOnce(reason: String) async {
        guard running, let configurations = try? store.allConfigurations() else { return }
        let candidates = configurations.filter { $0.isEnabled && $0.isOnDemandEnabled && !$0.onDemandRules.isEmpty }
        guard !candidates.isEmpty else {
            await updateWatch([:])
            return
        }
        // Reading routes and probing URLs block: both happen off the cooperative pool.
        let observer = self.observer, logger = self.logger
        let environment = await BlockingWork.run { observer.environment() }
        var watch: [UUID: (configuration: Configuration, rules: [EvaluateConnectionRule])] = [:]
        for configuration in candidates {
            // Packet tunnels and personal VPNs connect on demand (Apple's `NEVPNManager` has the
            // same rules), and so do relays (`NERelayManager.onDemandRules`).
            switch configuration.protocolConfiguration {
            case .tunnelProvider, .personalVPN, .dnsSettings, .relay: break
            default: continue
            }
            let rules = configuration.onDemandRules
            let (decision, rule) = await BlockingWork.run {
                OnDemandEvaluator.decision(rules, in: environment) { url in
                    if url.scheme != "http" { logger.notice("on-demand probe URLs must be http here; the rule does not match", metadata: ["url": "\(url)"]) }
                    return HTTPProbe.succeeds(url)
                }
            }
            let summary = "\(decision.rawValue) (rule \(rule.map { String($0 + 1) } ?? "none"))"
            if lastDecision[configuration.id] != summary {
                lastDecision[configuration.id] = summary
                logger.info("on-demand decision", metadata: [
                    "configuration": "\(configuration.localizedDescription)", "decision": "\(summary)", "reason": "\(reason)",
                    "network": .dictionary([
                        "interface": "\(environment.primaryInterface ?? "none")", "type": "\(environment.interfaceType?.rawValue ?? "none")",
                        "ssid": "\(environment.ssid ?? "")", "search": .array(environment.dnsSearchDomains.map { .string($0) }),
                        "dns": .array(environment.dnsServers.map { .string($0) }),
                    ]),
                ])
            }
            if case .dnsSettings = configuration.protocolConfiguration {
                // DNS settings (Apple's NEDNSSettingsManager.onDemandRules): Connect puts them in
                // force, Disconnect takes them out; no match leaves them as they are.
                switch decision {
                case .connect: await sessions.dnsSettingsOnDemand(configuration, applies: true)
                case .disconnect: await sessions.dnsSettingsOnDemand(configuration, applies: false)
                case .leave: break
                }
                continue
            }
            if let rule, configuration.onDemandRules[rule].action == .evaluateConnection {
                watch[configuration.id] = (configuration, configuration.onDemandRules[rule].connectionRules ?? [])
            }
            let status = await sessions.statusInfo(for: configuration).status
            switch decision {
            case .connect:
                if status == .connected { failures[configuration.id] = nil }
                guard status == .disconnected || status == .invalid, !connecting.contains(configuration.id) else { continue }
                if let failure = failures[configuration.id], Date() < failure.notBefore { continue }
                connecting.insert(configuration.id)
                Task { await self.connect(configuration) }
            case .disconnect:
                failures[configuration.id] = nil
                if status.isActive { Task { await self.sessions.stop(configuration, reason: .onDemandDisconnect) } }
            case .leave:
                break
            }
        }
        await updateWatch(watch)
    }

    /// Starts or stops watching resolved names as EvaluateConnection rules come and go.
    private func updateWatch(_ watch: [UUID: (configuration: Configuration, rules: [EvaluateConnectionRule])]) async {
        let wasWatching = !watchedNames.isEmpty
        watchedNames = watch
        guard wasWatching != !watch.isEmpty else { return }
        if watch.isEmpty {
            await sessions.watchResolvedNames(nil)
        } else {
            await sessions.watchResolvedNames { [weak self] name in
                // Called on a DNS forwarding thread: the query waits until on-demand decided
                // (and, if needed, the VPN is up), at most 20 s.
                let done = DispatchSemaphore(value: 0)
                Task {
                    await self?.nameResolved(name)
                    done.signal()
                }
                _ = done.wait(timeout: .now() + 20)
            }
        }
    }

    /// EvaluateConnection: the first connection rule whose domains contain `name` decides:
    /// neverConnect leaves the VPN down; connectIfNeeded brings it up unless the name resolves
    /// through `useDNSServers` or `probeURL` answers 200 without it.
    func nameResolved(_ name: String) async {
        for (id, entry) in watchedNames {
            guard let rule = entry.rules.first(where: { rule in rule.matchDomains.contains { OnDemandEvaluator.domainMatches(name, pattern: $0.hasPrefix("*.") ? $0 : "*." + $0) } }),
                  rule.action == .connectIfNeeded else { continue }
            let status = await sessions.statusInfo(for: entry.configuration).status
            guard status == .disconnected || status == .invalid, !connecting.contains(id) else { continue }
            if let probe = rule.probeURL, HTTPProbe.succeeds(probe) { continue }
            if let servers = rule.useDNSServers, !servers.isEmpty, DNSReachability.resolves(name, via: servers) { continue }
            logger.info("on-demand: a program resolved a name that needs the VPN", metadata: [
                "configuration": "\(entry.configuration.localizedDescription)", "name": "\(name)", "rule": "connectIfNeeded \(rule.matchDomains)",
            ])
            connecting.insert(id)
            await connect(entry.configuration)
        }
    }

    /// Per-app on demand: a bound app opened a connection while its per-app VPN (enabled, with
    /// on-demand on) is down; its packets are held (dropped, to be retransmitted) until it is up.
    public func appFlowSeen(_ id: UUID) async {
        guard running, let configuration = try? store.configuration(id: id), configuration.isEnabled, configuration.isOnDemandEnabled else { return }
        let status = await sessions.statusInfo(for: configuration).status
        guard status == .disconnected || status == .invalid, !connecting.contains(id) else { return }
        if let failure = failures[id], Date() < failure.notBefore { return }
        logger.info("on-demand: a bound app opened a connection", metadata: ["configuration": "\(configuration.localizedDescription)"])
        connecting.insert(id)
        await connect(configuration)
    }

    private func connect(_ configuration: Configuration) async {
        defer { connecting.remove(configuration.id) }
        logger.info("on-demand: connecting", metadata: ["configuration": "\(configuration.localizedDescription)"])
        var reason: String
        do {
            let info = try await sessions.start(configuration, options: [:], password: try password(configuration))
            if info.status == .connected {
                failures[configuration.id] = nil
                return
            }
            reason = info.lastDisconnectError?.message ?? "ended \(info.status.rawValue)"
        } catch let failure as NetExtError {
            reason = failure.message
        } catch {
            reason = "\(error)"
        }
        let count = (failures[configuration.id]?.count ?? 0) + 1
        let delay = min(Self.maximumBackoff, pow(2, Double(count - 1)))
        failures[configuration.id] = (count, Date().addingTimeInterval(delay))
        logger.warning("on-demand connect failed; retrying", metadata: [
            "configuration": "\(configuration.localizedDescription)", "error": "\(reason)", "retryInSeconds": "\(Int(delay))", "attempt": "\(count)",
        ])
    }
}
