import FlowInspection
import Foundation
import Logging
import NetExtCore

/// Per-app routing (DESIGN.md, "Flows"): which apps each enabled tunnel carries (a per-app
/// VPN's `appRules`) or lets bypass it (`excludedAppRules`), the cgroups those apps live in now,
/// and the nftables table that marks their flows (``FlowSteering``). A configuration's apps are
/// marked from the moment it is enabled until it is disabled or removed — so the kill switch can
/// tell them apart while the tunnel is down — and its policy rules (the session's plan) send
/// marked flows into or around the tunnel while it is connected.
///
/// New cgroups are found by the host's watcher (inotify) and a scan of the hierarchy; a process
/// launched with `netext run --app` is placed in its app's cgroup, and the set updated, before
/// netextd answers, so its first socket is already steered.
///
/// An app whose rule has `matchDomains` (include mode) is steered only toward the addresses DNS
/// answered for names in those domains: while the tunnel is connected its queries go to a
/// resolver of netextd's for its rule (``DomainResolver``), which asks the tunnel's servers for
/// names in the domains, adds their addresses to the rule's sets before the app has the answer,
/// and asks the machine's resolvers for every other name.
actor AppSteeringController {
    /// A cgroup of an app proxy's app, as the flow hand-over identifies sockets by it.
    struct ProxiedCgroup: Sendable, Hashable {
        var path: String
        var app: AppIdentifier
        /// Its id (what sock_diag reports for a socket created in it), when it could be read.
        var id: UInt64?
        /// Its `cgroup.procs`.
        var procs: String?
    }

    /// What a domain-limited rule's resolver is opened with.
    struct DomainResolverRequest: Sendable, Hashable {
        var domains: [String]
        /// Where names in the domains are resolved (through the tunnel, with `mark`).
        var tunnelServers: [String]
        /// Where other names are resolved.
        var otherServers: [String]
        var mark: UInt32
    }

    /// A running resolver for one domain-limited rule's apps.
    struct DomainResolver: Sendable {
        /// Where it listens.
        var address: FlowSteering.LoopbackResolver
        var stop: @Sendable () -> Void
    }

    /// Starts a resolver; the closure it is given must be called with each answer from the
    /// tunnel's servers before the answer is relayed, and returns once its addresses are steered.
    typealias DomainResolverOpener = @Sendable (DomainResolverRequest, @escaping @Sendable ([UInt8]) -> Void) throws(NetExtError) -> DomainResolver

    struct Entry {
        var configuration: Configuration
        var mode: FlowSteering.Mode
        var rules: [AppRule]
        var mark: UInt32
        var interface = ""
        /// Include mode, while connected: the tunnel's resolvers.
        var tunnelResolvers: [String] = []
        /// Exclude mode: the resolvers from before the tunnel.
        var bypassResolvers: [String] = []
        var tunnelAddresses: [IPPrefix] = []
        /// The addresses answered for each domain-limited rule (by its index in `domainRules`).
        var learned: [Int: LearnedDestinations] = [:]
        /// The resolver of each domain-limited rule, while the tunnel is connected.
        var resolvers: [Int: DomainResolver] = [:]
        /// Include mode: the rules limited to domains, in order (the index names their sets).
        var domainRules: [AppRule] { mode == .include ? rules.filter { !$0.matchDomains.isEmpty } : [] }
        /// The apps steered for every destination.
        var fullApps: Set<AppIdentifier> { Set(rules.filter { mode == .exclude || $0.matchDomains.isEmpty }.map(\.matchSigningIdentifier)) }
        /// Stops the rules' resolvers.
        mutating func stopResolvers() {
            for resolver in resolvers.values { resolver.stop() }
            resolvers = [:]
        }
        /// Where the apps' DNS queries go (empty: left as sent).
        var dnsServers: [String] {
            switch mode {
            case .include: tunnelResolvers
            case .exclude: bypassResolvers
            case .proxy: []
            }
        }
        /// An app proxy's listeners while its provider runs.
        var proxyPorts: FlowSteering.ProxyPorts?
        /// Where the app proxy's apps' DNS goes while its provider runs (per-app relays' resolver).
        var proxyResolver: FlowSteering.LoopbackResolver?
        /// Per-app on demand: the apps' first flow starts the tunnel.
        var onDemand: Bool { mode == .include && configuration.isOnDemandEnabled }
    }

    /// Starts holding DNS answers (``ProxyDNSHold``): each readable answer is given to the closure,
    /// which returns once its addresses are steered; returns what stops the hold.
    typealias DNSHoldOpener = @Sendable (@escaping @Sendable (DNSAnswerAddresses) -> Void) throws(NetExtError) -> @Sendable () -> Void

    /// Opens a netfilter log group and calls back for each burst of packets logged to it;
    /// returns what closes it.
    typealias TriggerOpener = @Sendable (UInt16, @escaping @Sendable () -> Void) throws(NetExtError) -> @Sendable () -> Void

    private var entries: [UUID: Entry] = [:]
    private var cgroups: [FlowSteering.AppCgroup] = []
    private let host: (any AppCgroupHost)?
    private let hostProblem: String
    /// The directory (relative to the cgroup root) netextd launches apps in.
    let launchRoot: String
    private let network: NetworkWorker
    private let logger: Logger
    private var watching = false
    private let openTrigger: TriggerOpener?
    /// The open log groups of per-app on demand, by configuration, with what closes each.
    private var triggers: [UUID: (group: UInt16, close: @Sendable () -> Void)] = [:]
    private var onAppFlow: (@Sendable (UUID) -> Void)?
    /// The cgroups whose new sockets an eBPF program marks at creation, with the mark.
    private var socketMarks: [String: UInt32] = [:]

    private let openResolver: DomainResolverOpener?
    /// Running transparent proxies.
    private var transparent: [UUID: FlowSteering.TransparentProxy] = [:]
    /// The addresses answered for each running transparent proxy's host rules, by rule index.
    private var hostLearned: [UUID: (included: [Int: LearnedDestinations], excluded: [Int: LearnedDestinations])] = [:]
    private let openDNSHold: DNSHoldOpener?
    /// What stops the DNS hold, while some transparent proxy has host rules.
    private var dnsHold: (@Sendable () -> Void)?
    /// Running app proxies, told their apps' cgroups after every change.
    private var proxyObservers: [UUID: @Sendable ([ProxiedCgroup]) -> Void] = [:]

    init(
        host: (any AppCgroupHost)?, hostProblem: String = "no cgroup v2 hierarchy was found", launchRoot: String, network: NetworkWorker, logger: Logger,
        openTrigger: TriggerOpener? = nil, openResolver: DomainResolverOpener? = nil, openDNSHold: DNSHoldOpener? = nil
    ) {
        self.openDNSHold = openDNSHold
        self.openTrigger = openTrigger
        self.openResolver = openResolver
        self.host = host
        self.hostProblem = hostProblem
        self.launchRoot = launchRoot
        self.network = network
        self.logger = logger
    }

    // MARK: Configurations and tunnels

    /// Takes a saved, restored or removed configuration: an enabled tunnel with app rules is
    /// steered from now on; anything else is not (any more).
    /// `testApps`: a per-app VPN's apps from its provider manifest's `testAppMapping`
    /// (development), carried besides its stored rules. `bypassResolvers`: the machine's resolvers
    /// from before any tunnel: where an excluded app's DNS queries go, whether or not the tunnel
    /// is up, and a domain-limited app's names outside its domains.
    func update(_ configuration: Configuration, removed: Bool = false, testApps: [AppIdentifier] = [], bypassResolvers: [String] = []) async {
        let wanted = removed ? nil : Self.steeredApps(of: configuration, testApps: testApps)
        guard let (mode, rules) = wanted else {
            guard var removedEntry = entries.removeValue(forKey: configuration.id) else { return }
            removedEntry.stopResolvers()
            logger.notice("per-app routing ended", metadata: ["configuration": "\(LogText.quoted(configuration.localizedDescription))"])
            await applyWanted()
            return
        }
        if var entry = entries[configuration.id] {
            guard entry.rules != rules || entry.mode != mode || entry.configuration != configuration || entry.bypassResolvers != bypassResolvers else { return }
            if entry.rules != rules || entry.mode != mode || entry.bypassResolvers != bypassResolvers {
                // Rule indexes and resolvers' servers may have changed: learned anew.
                entry.stopResolvers()
                entry.learned = [:]
            }
            entry.configuration = configuration
            entry.mode = mode
            entry.rules = rules
            entry.bypassResolvers = bypassResolvers
            entries[configuration.id] = entry
        } else {
            let used = Set(entries.values.map(\.mark))
            guard let mark = (0...FlowSteering.maximumSlots).lazy.map(FlowSteering.mark(slot:)).first(where: { !used.contains($0) }) else {
                logger.error("per-app routing: every steering mark is in use", metadata: ["configuration": "\(LogText.quoted(configuration.localizedDescription))"])
                return
            }
            entries[configuration.id] = Entry(configuration: configuration, mode: mode, rules: rules, mark: mark, bypassResolvers: bypassResolvers)
            logger.notice("per-app routing in force", metadata: [
                "configuration": "\(LogText.quoted(configuration.localizedDescription))", "mode": "\(mode.rawValue)",
                "apps": "\(rules.map(\.matchSigningIdentifier.rawValue))", "mark": "\(FlowSteering.hex(mark))",
            ])
        }
        startWatchingIfNeeded()
        await rescan(applyingAnyway: true)
    }

    /// At start: every enabled configuration with app rules; whatever an earlier netextd left is
    /// replaced (or removed, if none has any).
    func restore(_ configurations: [Configuration], testApps: [UUID: [AppIdentifier]] = [:], bypassResolvers: [String] = []) async {
        entries = [:]
        for configuration in configurations {
            await update(configuration, testApps: testApps[configuration.id] ?? [], bypassResolvers: bypassResolvers)
        }
        if entries.isEmpty { await applyWanted() }
    }

    /// The enabled tunnel's apps and mode, if it routes by app at all.
    static func steeredApps(of configuration: Configuration, testApps: [AppIdentifier] = []) -> (FlowSteering.Mode, [AppRule])? {
        guard configuration.isEnabled, case .tunnelProvider(let settings) = configuration.protocolConfiguration else { return nil }
        if settings.isPerApp {
            // An app proxy takes its apps' flows; a DNS proxy bound to apps, their DNS.
            if settings.providerType == .appProxy || settings.providerType == .dnsProxy { return (.proxy, settings.appRules) }
            let stored = Set(settings.appRules.map(\.matchSigningIdentifier))
            let mapped = testApps.filter { !stored.contains($0) }.compactMap { try? AppRule(matchSigningIdentifier: $0) }
            return (.include, settings.appRules + mapped)
        }
        if !settings.excludedAppRules.isEmpty { return (.exclude, settings.excludedAppRules) }
        return nil
    }

    /// How the session's plan routes marked flows: nil for a tunnel that does not route by app.
    func routing(for id: UUID) -> NetworkPlan.AppRouting? {
        guard let entry = entries[id] else { return nil }
        switch entry.mode {
        case .include: return .include(mark: entry.mark)
        case .exclude: return .exclude(mark: entry.mark)
        case .proxy: return nil
        }
    }

    /// The mark of a configuration's apps and its mode (the kill switch's exceptions).
    func mark(for id: UUID) -> FlowSteering.Marking? {
        entries[id].map { FlowSteering.Marking(mode: $0.mode, mark: $0.mark) }
    }

    /// The tunnel is up on `interface` with `addresses`: the masquerade knows them, and include
    /// mode sends the apps' DNS queries to the tunnel's `resolvers`.
    func tunnelUp(_ id: UUID, interface: String, addresses: [IPPrefix], resolvers: [String]) async {
        guard var entry = entries[id] else { return }
        if entry.tunnelResolvers != resolvers || entry.interface != interface { entry.stopResolvers() }
        entry.interface = interface
        entry.tunnelAddresses = addresses
        entry.tunnelResolvers = resolvers
        entries[id] = entry
        await applyWanted()
    }

    /// The app proxy's provider runs and its listeners wait on `ports`: the apps' TCP and UDP
    /// flows go there from now on, and their DNS queries to `resolver` when there is one.
    /// `appsChanged` is told the cgroups of its apps now and whenever they change.
    func proxyUp(
        _ id: UUID, ports: FlowSteering.ProxyPorts, resolver: FlowSteering.LoopbackResolver? = nil, appsChanged: @escaping @Sendable ([ProxiedCgroup]) -> Void
    ) async throws(NetExtError) {
        guard var entry = entries[id], entry.mode == .proxy else {
            throw NetExtError(.configurationInvalid, "this app proxy has no apps to proxy (bind apps with `netext app bind`)")
        }
        entry.proxyPorts = ports
        entry.proxyResolver = resolver
        entries[id] = entry
        proxyObservers[id] = appsChanged
        await applyWanted()
    }

    /// The app proxy's provider stopped: its apps' flows go direct again.
    func proxyDown(_ id: UUID) async {
        proxyObservers[id] = nil
        guard entries[id]?.proxyPorts != nil else { return }
        entries[id]?.proxyPorts = nil
        entries[id]?.proxyResolver = nil
        await applyWanted()
    }

    /// A transparent proxy's provider asked for `settings`: the matching flows of every program
    /// (but those of `exemptUIDs`) go to its listeners on `ports` from now on.
    func transparentUp(_ id: UUID, ports: FlowSteering.ProxyPorts, settings: TransparentProxyNetworkSettings, exemptUIDs: [UInt32]) async throws(NetExtError) {
        let mark: UInt32
        if let running = transparent[id] {
            mark = running.mark
        } else {
            let used = Set(transparent.values.map(\.mark))
            guard let free = (0..<FlowSteering.maximumTransparentProxies).lazy.map(FlowSteering.transparentMark(index:)).first(where: { !used.contains($0) }) else {
                throw NetExtError(.connectionFailed, "\(FlowSteering.maximumTransparentProxies) transparent proxies run already")
            }
            mark = free
        }
        // New rules: what was learned for the old ones' indexes no longer applies.
        let previous = transparent[id]
        transparent[id] = FlowSteering.TransparentProxy(configuration: id, mark: mark, ports: ports, settings: settings, exemptUIDs: exemptUIDs)
        do { try updateDNSHold() } catch {
            // Refused: the proxy keeps what it had (nothing, or its earlier rules).
            transparent[id] = previous
            throw error
        }
        if previous?.settings != settings { hostLearned[id] = nil }
        await applyWanted()
    }

    /// The transparent proxy stopped (or cleared its settings): its flows go direct again.
    func transparentDown(_ id: UUID) async {
        guard transparent.removeValue(forKey: id) != nil else { return }
        hostLearned[id] = nil
        try? updateDNSHold()
        await applyWanted()
    }

    // MARK: Host rules

    /// Holds DNS answers while some transparent proxy has host rules, and stops when none has;
    /// throws (the proxy's settings are refused) when the hold cannot start.
    private func updateDNSHold() throws(NetExtError) {
        let needed = transparent.values.contains { $0.settings.hasHostRules }
        if !needed, let close = dnsHold {
            dnsHold = nil
            close()
            return
        }
        guard needed, dnsHold == nil else { return }
        guard let openDNSHold else {
            throw NetExtError(.connectionFailed, "host rules cannot be steered here: netextd cannot hold DNS answers without the cgroup v2 hierarchy and iptables-nft")
        }
        dnsHold = try openDNSHold { [weak self] answer in
            guard let self else { return }
            // The answer waits for its addresses to be in the sets: the app's first connection
            // to them is already steered.
            let steered = DispatchSemaphore(value: 0)
            Task {
                await self.learnHosts(answer)
                steered.signal()
            }
            _ = steered.wait(timeout: .now() + .seconds(2))
        }
    }

    /// Takes a DNS answer: its addresses join the sets of every host rule covering its name.
    func learnHosts(_ answer: DNSAnswerAddresses) async {
        let now = ContinuousClock.now
        let answers = answer.addresses.map { ($0.bytes, $0.ttl) }
        var changed = false
        /// The answer's addresses into the sets of `rules` that cover its name.
        func learn(_ rules: [NetworkRule], into sets: inout [Int: LearnedDestinations]) {
            for (index, rule) in rules.enumerated() where rule.covers(host: answer.name) {
                var destinations = sets[index] ?? LearnedDestinations()
                destinations.expire(now: now)
                if destinations.learn(answers, now: now) { changed = true }
                sets[index] = destinations
            }
        }
        for (id, proxy) in transparent where proxy.settings.hasHostRules {
            var learned = hostLearned[id] ?? ([:], [:])
            learn(proxy.settings.includedNetworkRules, into: &learned.included)
            learn(proxy.settings.excludedNetworkRules, into: &learned.excluded)
            hostLearned[id] = learned
        }
        guard changed else { return }
        logger.debug("transparent proxy: a host rule's destinations learned", metadata: ["name": "\(answer.name)", "addresses": "\(answer.addresses.count)"])
        await applyWanted()
    }

    /// The tunnel on `interface` is gone (a newer tunnel of the same configuration is left alone).
    func tunnelDown(_ id: UUID, interface: String) async {
        guard var entry = entries[id], entry.interface == interface else { return }
        entry.interface = ""
        entry.tunnelAddresses = []
        entry.tunnelResolvers = []
        entry.stopResolvers()
        entries[id] = entry
        await applyWanted()
    }

    /// Who is told when a bound app's flow arrives while its per-app VPN is down (on demand).
    func setAppFlowHandler(_ handler: @escaping @Sendable (UUID) -> Void) { onAppFlow = handler }

    private func appFlowSeen(_ id: UUID) {
        guard let entry = entries[id], entry.onDemand, entry.interface.isEmpty else { return }
        onAppFlow?(id)
    }

    // MARK: Apps

    /// The enabled tunnel `app` is bound to, and its rule for the app.
    func binding(of app: AppIdentifier) -> (entry: Entry, rule: AppRule)? {
        for entry in entries.values {
            if let rule = entry.rules.first(where: { $0.matchSigningIdentifier == app }) { return (entry, rule) }
        }
        return nil
    }

    /// Moves process `pid` into `app`'s launch cgroup (made if missing) and updates the sets
    /// before returning. Returns the cgroup's path and the configuration the app is bound to.
    func place(pid: Int32, app: AppIdentifier, executable: String?) async throws(NetExtError) -> (cgroup: String, binding: Entry?) {
        guard let host else { throw NetExtError(.connectionFailed, "per-app routing needs cgroup v2: \(hostProblem)") }
        let binding = binding(of: app)
        if let path = binding?.rule.matchPath, executable != path {
            throw .invalid("\(app) is bound with matchPath \(path); '\(executable ?? "?")' is another program")
        }
        let path = launchRoot + "/" + app.rawValue
        try host.place(pid: pid, in: path)
        startWatchingIfNeeded()
        await rescan()
        logger.info("process placed in its app's cgroup", metadata: ["pid": "\(pid)", "app": "\(app)", "cgroup": "\(path)"])
        return (path, binding?.entry)
    }

    /// Every bound app with its configuration and live cgroups, for those `isVisible` admits.
    func statuses(isVisible: (Configuration) -> Bool, isConnected: (UUID) -> Bool) -> [AppBindingStatus] {
        let now = ContinuousClock.now
        return entries.values.filter { isVisible($0.configuration) }.flatMap { entry in
            let limited = entry.domainRules.map(\.matchSigningIdentifier)
            return entry.rules.map { rule in
                let index = limited.firstIndex(of: rule.matchSigningIdentifier)
                return AppBindingStatus(
                    app: rule.matchSigningIdentifier.rawValue, configuration: entry.configuration.id,
                    configurationName: entry.configuration.localizedDescription, mode: entry.mode, matchPath: rule.matchPath,
                    cgroups: cgroups.filter { $0.app == rule.matchSigningIdentifier }.map(\.path), isConnected: isConnected(entry.configuration.id),
                    matchDomains: rule.matchDomains.isEmpty ? nil : rule.matchDomains,
                    learnedDestinations: index.map { entry.learned[$0]?.alive(now: now).count ?? 0 })
            }
        }.sorted { ($0.app, $0.configurationName) < ($1.app, $1.configurationName) }
    }

    /// Scans the hierarchy again and updates the sets if the apps' cgroups changed (or, with
    /// `applyingAnyway`, whether or not they did: the entries changed).
    func rescan(applyingAnyway: Bool = false) async {
        let found = scannedCgroups()
        guard found != cgroups || applyingAnyway else { return }
        cgroups = found
        await applyWanted()
    }

    /// Removes the table, stops watching and removes the launch cgroups left empty (shutdown).
    func shutdown() async {
        for id in entries.keys { entries[id]?.stopResolvers() }
        entries = [:]
        transparent = [:]
        hostLearned = [:]
        try? updateDNSHold()
        proxyObservers = [:]
        cgroups = []
        for trigger in triggers.values { trigger.close() }
        triggers = [:]
        host?.stopWatching()
        watching = false
        await applyWanted()
        if let host {
            for path in host.scan() where path.hasPrefix(launchRoot + "/") { host.removeIfEmpty(path, keeping: "") }
        }
    }

    // MARK: Applying

    /// The cgroups of every steered app in the hierarchy now (no scan without apps).
    private func scannedCgroups() -> [FlowSteering.AppCgroup] {
        let apps = entries.values.flatMap(\.rules).map { AppCgroupMatcher.App($0.matchSigningIdentifier, extraPatterns: $0.matchUnits) }
        guard !apps.isEmpty, let host else { return [] }
        return AppCgroupMatcher(apps: apps, launchRoot: launchRoot).cgroups(in: host.scan())
    }

    private func startWatchingIfNeeded() {
        guard !watching, let host, !entries.isEmpty else { return }
        watching = true
        host.startWatching { [weak self] in
            guard let self else { return }
            Task { await self.rescan() }
        }
    }

    private func wanted() -> FlowSteering {
        let now = ContinuousClock.now
        return FlowSteering(
            members: entries.values.map { entry in
                let apps = entry.fullApps
                let limited = entry.domainRules.enumerated().map { index, rule in
                    FlowSteering.DomainLimitedApps(
                        index: index, cgroups: cgroups.filter { $0.app == rule.matchSigningIdentifier },
                        destinations: entry.learned[index]?.alive(now: now) ?? [],
                        resolver: entry.resolvers[index]?.address)
                }
                return FlowSteering.Member(
                    configuration: entry.configuration.id, mode: entry.mode, mark: entry.mark, interface: entry.interface,
                    cgroups: cgroups.filter { apps.contains($0.app) }, dnsServers: entry.dnsServers, tunnelAddresses: entry.tunnelAddresses,
                    onDemandLogGroup: triggers[entry.configuration.id]?.group, domainLimited: limited,
                    socketMarked: Set(socketMarks.filter { $0.value == entry.mark }.keys), isOnDemand: entry.onDemand,
                    proxyPorts: entry.proxyPorts, takesOnlyDNS: entry.configuration.tunnelProviderSettings?.providerType == .dnsProxy,
                    proxyResolver: entry.proxyResolver)
            },
            transparentProxies: transparent.values.map { proxy in
                var proxy = proxy
                if let learned = hostLearned[proxy.configuration] {
                    proxy.includedHostDestinations = learned.included.mapValues { $0.alive(now: now) }
                    proxy.excludedHostDestinations = learned.excluded.mapValues { $0.alive(now: now) }
                }
                return proxy
            },
            nftPathPrefix: host?.nftPathPrefix ?? "")
    }

    // MARK: Domain-limited apps

    /// Starts the resolver of every domain-limited rule of a connected tunnel that has
    /// resolvers, and stops the others'.
    private func updateDomainResolvers() {
        for id in Array(entries.keys) {
            guard var entry = entries[id] else { continue }
            let wanted = entry.interface.isEmpty || entry.tunnelResolvers.isEmpty ? [] : entry.domainRules
            for (index, resolver) in entry.resolvers where index >= wanted.count {
                resolver.stop()
                entry.resolvers[index] = nil
            }
            if let openResolver {
                for (index, rule) in wanted.enumerated() where entry.resolvers[index] == nil {
                    let request = DomainResolverRequest(domains: rule.matchDomains, tunnelServers: entry.tunnelResolvers, otherServers: entry.bypassResolvers, mark: entry.mark)
                    do throws(NetExtError) {
                        entry.resolvers[index] = try openResolver(request) { [weak self] answer in
                            guard let self else { return }
                            // The answer waits for its addresses to be in the sets: the app's
                            // first connection to them is already steered.
                            let steered = DispatchSemaphore(value: 0)
                            Task {
                                await self.learn(answer, tunnel: id, rule: index)
                                steered.signal()
                            }
                            _ = steered.wait(timeout: .now() + .seconds(2))
                        }
                    } catch {
                        logger.error("per-app DNS for domain-limited apps is unavailable", metadata: [
                            "configuration": "\(LogText.quoted(entry.configuration.localizedDescription))", "app": "\(rule.matchSigningIdentifier)", "error": "\(error.message)",
                        ])
                    }
                }
            }
            entries[id] = entry
        }
    }

    /// Takes an answer the tunnel's servers gave a domain-limited rule's apps: its addresses (for
    /// a name within the rule's domains) join the rule's sets.
    func learn(_ answer: [UInt8], tunnel id: UUID, rule index: Int) async {
        guard var entry = entries[id], entry.domainRules.indices.contains(index),
              let parsed = try? DNSAnswerAddresses(parsing: answer), entry.domainRules[index].covers(host: parsed.name), !parsed.addresses.isEmpty else { return }
        let now = ContinuousClock.now
        var learned = entry.learned[index] ?? LearnedDestinations()
        learned.expire(now: now)
        let changed = learned.learn(parsed.addresses.map { ($0.bytes, $0.ttl) }, now: now)
        entry.learned[index] = learned
        entries[id] = entry
        guard changed else { return }
        logger.debug("per-app: destinations learned", metadata: ["name": "\(parsed.name)", "addresses": "\(parsed.addresses.count)"])
        await applyWanted()
    }

    /// Opens the log group of every tunnel waiting for its apps' first flow, closes the others'.
    private func updateTriggers() {
        for (id, trigger) in triggers where !(entries[id].map { $0.onDemand && $0.interface.isEmpty } ?? false) {
            trigger.close()
            triggers[id] = nil
        }
        guard let openTrigger else { return }
        for entry in entries.values where entry.onDemand && entry.interface.isEmpty && triggers[entry.configuration.id] == nil {
            let id = entry.configuration.id, group = FlowSteering.onDemandLogGroup(mark: entry.mark)
            do throws(NetExtError) {
                let close = try openTrigger(group) { [weak self] in
                    guard let self else { return }
                    Task { await self.appFlowSeen(id) }
                }
                triggers[id] = (group, close)
            } catch {
                logger.error("per-app on demand is unavailable", metadata: ["configuration": "\(LogText.quoted(entry.configuration.localizedDescription))", "error": "\(error.message)"])
            }
        }
    }

    /// Installs the table for the entries and cgroups known now. A cgroup that vanished between
    /// the scan and nft's reading of it makes nft refuse the whole table: scanned again and
    /// retried (three times at most).
    /// Puts the socket-creation mark on every app cgroup of a steered tunnel and takes it off the
    /// others: a socket created there gets its tunnel's route and source address from the
    /// start, so its packets are not rerouted one by one.
    private func updateSocketMarks() {
        guard let host else { return }
        var wanted: [String: UInt32] = [:]
        // An app proxy's apps are marked by the table after their route was chosen: a socket
        // marked at creation would find the proxy table's local route and fail to connect.
        for entry in entries.values where entry.mode != .proxy {
            // A domain-limited app's sockets are marked per destination, by the table.
            let apps = entry.fullApps
            for cgroup in cgroups where apps.contains(cgroup.app) { wanted[cgroup.path] = entry.mark }
        }
        for (path, mark) in socketMarks where wanted[path] != mark {
            host.unmarkSockets(in: path, mark: mark)
            socketMarks[path] = nil
        }
        for (path, mark) in wanted where socketMarks[path] == nil {
            if host.markSockets(in: path, mark: mark) { socketMarks[path] = mark }
        }
    }

    private func applyWanted() async {
        updateSocketMarks()
        for (id, observer) in proxyObservers {
            guard let entry = entries[id] else { continue }
            let apps = Set(entry.rules.map(\.matchSigningIdentifier))
            observer(cgroups.filter { apps.contains($0.app) }.map { cgroup in
                let identity = host?.identity(of: cgroup.path)
                return ProxiedCgroup(path: cgroup.path, app: cgroup.app, id: identity?.id, procs: identity?.procs)
            })
        }
        if host != nil && host?.nftPathPrefix == nil && !entries.isEmpty {
            logger.error("per-app routing: nft finds cgroups only below /sys/fs/cgroup; mount cgroup2 there (or at /sys/fs/cgroup/unified)")
        }
        updateTriggers()
        updateDomainResolvers()
        for attempt in 1...3 {
            let steering = wanted()
            do throws(NetExtError) {
                try await network.performThrowing { applier throws(NetExtError) in try applier.applySteering(steering) }
                return
            } catch {
                if attempt == 3 || host == nil {
                    logger.error("cannot install the per-app steering", metadata: ["error": "\(error.message)"])
                    return
                }
                cgroups = scannedCgroups()
            }
        }
    }
}
