import Dispatch
import Foundation
import Logging
import NetExtCore
import NetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// netextd: opens the store, serves the control socket, restores what was running. What it
/// started is stopped by ``RunningDaemon/stop()`` (the command calls it at SIGTERM/SIGINT).
public final class Daemon: Sendable {
    public let settings: DaemonSettings
    let logger: Logger
    /// What netextd records; exported by the command when `--metrics-listen` is given.
    public let metrics: DaemonMetrics

    public init(settings: DaemonSettings, logger: Logger, metrics: DaemonMetrics = DaemonMetrics()) {
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
    }

    /// Opens the state, serves the control socket and restores what was running; returns once
    /// netextd serves. Throws (with the file at fault) if the state is unusable.
    public func start() async throws -> RunningDaemon {
        umask(0o077)
        signal(SIGPIPE, SIG_IGN)
        do {
            try FileManager.default.createDirectory(atPath: settings.stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw NetExtError.readWrite("cannot create the state directory \(settings.stateDirectory): \(error.localizedDescription)")
        }
        let descriptors = DescriptorLimit.raise()
        if descriptors.after < 4096 { logger.warning("few descriptors allowed; many clients may exhaust them", metadata: ["limit": "\(descriptors.after)"]) }
        let store = try ConfigurationStore(path: settings.databasePath)
        let secrets = try SecretStore(directory: settings.secretsDirectory)
        let collected = secrets.collectGarbage(keeping: try store.secretReferences())
        if collected > 0 { logger.info("removed secrets no configuration refers to", metadata: ["count": "\(collected)"]) }

        let hub = NotificationHub(metrics: metrics)
        metrics.countConfigurations { try? store.configurationCount() }
        let registry = ProviderRegistry(directory: settings.providersDirectory)
        let resolver = ResolverConfiguration(path: settings.resolverPath, backupPath: settings.stateDirectory + "/resolv.conf.backup")
        let throughResolved = settings.dnsBackend == .resolved || (settings.dnsBackend == .auto && ResolvedRegistration.resolvedRuns())
        let stubText = throughResolved ? settings.resolvedStubAddress : settings.dnsStubAddress
        var stubAddress = SocketAddress(stubText)
        if stubAddress == nil { logger.warning("NETEXT_DNS_STUB is not ADDRESS:PORT; DNS match domains will be ignored", metadata: ["value": "\(stubText)"]) }
        if throughResolved {
            if let address = stubAddress, address.isLoopback {
                logger.error("under systemd-resolved the DNS stub needs an address off loopback (resolved ignores loopback links); DNS match domains and settings will be refused", metadata: ["NETEXT_DNS_STUB": "\(stubText)"])
                stubAddress = nil
            }
            logger.notice("the machine's DNS goes through systemd-resolved (D-Bus); the resolver file is left to it", metadata: ["stubLink": "netext-dns"])
        }
        var appCgroups: (any AppCgroupHost)?
        var appCgroupProblem = ""
        do throws(NetExtError) { appCgroups = try SystemAppCgroups(marksSockets: settings.appSocketMarks) } catch {
            appCgroupProblem = error.message
            logger.notice("per-app routing is unavailable", metadata: ["reason": "\(error.message)"])
        }
        let sessions = SessionManager(
            registry: registry, hub: hub, logger: logger, resolver: resolver, resolvedLinkName: throughResolved ? "netext-dns" : nil,
            resolvedHoldFile: settings.stateDirectory + "/resolved-default-routes.json", dnsStubAddress: stubAddress, startDeadline: settings.providerStartDeadline,
            ikev2Directory: settings.stateDirectory + "/ikev2", secretLookup: { (reference) throws(NetExtError) in try secrets.secret(for: reference) },
            appCgroups: appCgroups, appCgroupProblem: appCgroupProblem, appLaunchRoot: settings.appCgroupRoot,
            proxyFlowLimit: settings.proxyFlowLimit)
        await sessions.removeStaleState()
        await sessions.restoreGuards(try store.allConfigurations())
        await sessions.restoreDNSSettings(try store.allConfigurations())
        let filters = FilterController(registry: registry, logger: logger, rulesRoot: settings.filterRulesRoot)
        await filters.restore(try store.allConfigurations())
        let urlFilters = URLFilterController(
            registry: registry, secrets: secrets, logger: logger, stateDirectory: settings.stateDirectory,
            fetchIntervalOverride: settings.prefilterFetchIntervalOverride)
        await urlFilters.restore(try store.allConfigurations())
        // One link to the machine's Wi-Fi service for on-demand's SSIDs, the helpers and the scan list.
        let wifi = MachineWiFiService()
        let service = ControlService(
            store: store, secrets: secrets, sessions: sessions, registry: registry, hub: hub, logger: logger, filters: filters, urlFilters: urlFilters,
            connectivityCheck: settings.connectivityCheck, captivePortalCAFile: settings.captivePortalCAFile,
            captivePortalObserver: settings.captivePortalMonitoring ? NetworkObserver(originalResolverContent: { "" }) : nil,
            captivePortalRecheck: settings.captivePortalRecheck, hotspotHelperStartDeadline: settings.providerStartDeadline,
            hotspotTiming: HotspotHelperSession.Timing(maintainInterval: settings.hotspotMaintainInterval), wifi: wifi)
        let adminGroupID = UserDatabase.groupID(named: settings.adminGroup)
        if adminGroupID == nil {
            logger.notice("admin group does not exist; only root may change configurations", metadata: ["group": "\(settings.adminGroup)"])
        }
        let server = try await ControlServer.start(path: settings.socketPath, service: service, adminGroupID: adminGroupID, logger: logger)
        let providers = registry.load()
        let configurationCount = try store.configurationCount()
        for problem in providers.problems { logger.warning("provider manifest refused", metadata: ["problem": "\(problem)"]) }
        logger.info("netextd ready", metadata: [
            "socket": "\(settings.socketPath)", "state": "\(settings.stateDirectory)",
            "providers": "\(providers.providers.count)", "configurations": "\(configurationCount)",
        ])

        let onDemand = OnDemandController(
            store: store, sessions: sessions, observer: NetworkObserver(originalResolverContent: { resolver.originalContent() }, wifi: wifi), logger: logger,
            password: { configuration in try secrets.password(of: configuration) })
        await onDemand.start()
        // Enabled relays are in force from the start (their provider's manifest is loaded now).
        await sessions.restoreRelays(try store.allConfigurations())
        // A captive portal opening (found by the monitor, or a helper's login) retries on-demand now.
        await service.captivePortalMonitor.whenOpened { await onDemand.networkOpened(reason: "captive portal opened") }
        await service.hotspotHelpers?.whenLoggedIn { await onDemand.networkOpened(reason: "hotspot helper logged in") }
        if let helpers = service.hotspotHelpers {
            await helpers.start()
            await helpers.follow(service.captivePortalMonitor.detections)
        }
        await service.captivePortalMonitor.start()
        // Joins and leaves of Wi-Fi networks, as the Wi-Fi service signals them: on-demand's
        // SSID rules are evaluated at once, and the helpers are handed each joined network.
        let wifiAssociations = WiFiAssociationMonitor(wifi: wifi, logger: logger)
        let associationChanges = await wifiAssociations.subscribe()
        Task {
            for await change in associationChanges { await onDemand.evaluate(reason: "Wi-Fi: \(change)") }
        }
        if let helpers = service.hotspotHelpers { await helpers.followAssociations(await wifiAssociations.subscribe()) }
        await wifiAssociations.start()
        await sessions.appSteering.setAppFlowHandler { id in Task { await onDemand.appFlowSeen(id) } }

        return RunningDaemon(
            settings: settings, logger: logger, registry: registry, onDemand: onDemand, captivePortalMonitor: service.captivePortalMonitor,
            hotspotHelpers: service.hotspotHelpers, wifiAssociations: wifiAssociations,
            sessions: sessions, filters: filters, urlFilters: urlFilters,
            server: server, configurationCount: configurationCount, providerCount: providers.providers.count)
    }

    /// How long a shutdown may take before netextd exits anyway. What a cut-short shutdown
    /// leaves (rules, routes, the resolver file) the next start removes (`removeStaleState`).
    static let shutdownDeadline: Double = 4.5

    /// A watchdog on a thread of its own (it must fire even when every other thread is stuck).
    static func exitIfShutdownHangs(after seconds: Double, logger: Logger) {
        let watchdog = Thread {
            Thread.sleep(forTimeInterval: seconds)
            logger.error("shutdown did not finish in time; exiting now", metadata: ["seconds": "\(seconds)"])
            _exit(1)
        }
        watchdog.name = "netextd-shutdown-watchdog"
        watchdog.start()
    }
}
