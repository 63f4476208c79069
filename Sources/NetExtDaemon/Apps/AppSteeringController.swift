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
actor AppSteeringController {
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
        /// Where the apps' DNS queries go (empty: left as sent).
        var dnsServers: [String] { mode == .include ? tunnelResolvers : bypassResolvers }
        /// Per-app on demand: the apps' first flow starts the tunnel.
        var onDemand: Bool { mode == .include && configuration.isOnDemandEnabled }
    }

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

    init(
        host: (any AppCgroupHost)?, hostProblem: String = "no cgroup v2 hierarchy was found", launchRoot: String, network: NetworkWorker, logger: Logger,
        openTrigger: TriggerOpener? = nil
    ) {
        self.openTrigger = openTrigger
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
    /// (development), carried besides its stored rules. `bypassResolvers`: in exclude mode, where
    /// the apps' DNS queries go (the machine's resolvers from before the tunnel), whether or not
    /// it is up.
    func update(_ configuration: Configuration, removed: Bool = false, testApps: [AppIdentifier] = [], bypassResolvers: [String] = []) async {
        let wanted = removed ? nil : Self.steeredApps(of: configuration, testApps: testApps)
        guard let (mode, rules) = wanted else {
            guard entries.removeValue(forKey: configuration.id) != nil else { return }
            logger.notice("per-app routing ended", metadata: ["configuration": "\(LogText.quoted(configuration.localizedDescription))"])
            await applyWanted()
            return
        }
        if var entry = entries[configuration.id] {
            guard entry.rules != rules || entry.mode != mode || entry.configuration != configuration || entry.bypassResolvers != bypassResolvers else { return }
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
        return entry.mode == .include ? .include(mark: entry.mark) : .exclude(mark: entry.mark)
    }

    /// The mark of a configuration's apps and its mode (the kill switch's exceptions).
    func mark(for id: UUID) -> FlowSteering.Marking? {
        entries[id].map { FlowSteering.Marking(mode: $0.mode, mark: $0.mark) }
    }

    /// The tunnel is up on `interface` with `addresses`: the masquerade knows them, and include
    /// mode sends the apps' DNS queries to the tunnel's `resolvers`.
    func tunnelUp(_ id: UUID, interface: String, addresses: [IPPrefix], resolvers: [String]) async {
        guard var entry = entries[id] else { return }
        entry.interface = interface
        entry.tunnelAddresses = addresses
        entry.tunnelResolvers = resolvers
        entries[id] = entry
        await applyWanted()
    }

    /// The tunnel on `interface` is gone (a newer tunnel of the same configuration is left alone).
    func tunnelDown(_ id: UUID, interface: String) async {
        guard var entry = entries[id], entry.interface == interface else { return }
        entry.interface = ""
        entry.tunnelAddresses = []
        entry.tunnelResolvers = []
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
        entries.values.filter { isVisible($0.configuration) }.flatMap { entry in
            entry.rules.map { rule in
                AppBindingStatus(
                    app: rule.matchSigningIdentifier.rawValue, configuration: entry.configuration.id,
                    configurationName: entry.configuration.localizedDescription, mode: entry.mode, matchPath: rule.matchPath,
                    cgroups: cgroups.filter { $0.app == rule.matchSigningIdentifier }.map(\.path), isConnected: isConnected(entry.configuration.id))
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
        entries = [:]
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
        FlowSteering(
            members: entries.values.map { entry in
                let apps = Set(entry.rules.map(\.matchSigningIdentifier))
                return FlowSteering.Member(
                    configuration: entry.configuration.id, mode: entry.mode, mark: entry.mark, interface: entry.interface,
                    cgroups: cgroups.filter { apps.contains($0.app) }, dnsServers: entry.dnsServers, tunnelAddresses: entry.tunnelAddresses,
                    onDemandLogGroup: triggers[entry.configuration.id]?.group)
            },
            nftPathPrefix: host?.nftPathPrefix ?? "")
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
        for entry in entries.values {
            let apps = Set(entry.rules.map(\.matchSigningIdentifier))
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
        if host != nil && host?.nftPathPrefix == nil && !entries.isEmpty {
            logger.error("per-app routing: nft finds cgroups only below /sys/fs/cgroup; mount cgroup2 there (or at /sys/fs/cgroup/unified)")
        }
        updateTriggers()
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
