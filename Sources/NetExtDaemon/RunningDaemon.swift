import Logging
import NetExtCore

/// A started netextd: what its reload re-reads and what its stop takes down.
public struct RunningDaemon: Sendable {
    let settings: DaemonSettings
    let logger: Logger
    let registry: ProviderRegistry
    let onDemand: OnDemandController
    let captivePortalMonitor: CaptivePortalMonitor
    let hotspotHelpers: HotspotHelperService?
    let wifiAssociations: WiFiAssociationMonitor
    let sessions: SessionManager
    let filters: FilterController
    let urlFilters: URLFilterController
    let server: ControlServer
    let configurationCount: Int
    let providerCount: Int

    /// A line for `systemctl status`.
    public var summary: String { "\(configurationCount) configurations, \(providerCount) providers; socket \(settings.socketPath)" }

    /// SIGHUP: provider manifests are read afresh at every look-up, so a reload reads the
    /// directory once to say what is registered now and what was refused. It never stops netextd.
    public func reloadManifests() -> (providers: [String], refused: [String]) {
        let providers = registry.load()
        for problem in providers.problems { logger.warning("provider manifest refused", metadata: ["problem": "\(problem)"]) }
        let names = providers.providers.map(\.bundleIdentifier)
        logger.notice("reloaded provider manifests", metadata: [
            "providers": "\(names.joined(separator: ","))", "refused": "\(providers.problems.count)",
        ])
        return (names, providers.problems.map { "\($0)" })
    }

    /// Stops on-demand, every session, filter and URL filter, then the control socket. Bounded:
    /// if it takes longer than ``Daemon/shutdownDeadline`` netextd exits anyway (what is left, the
    /// next start removes).
    public func stop() async {
        Daemon.exitIfShutdownHangs(after: Daemon.shutdownDeadline, logger: logger)
        await onDemand.stop()
        await hotspotHelpers?.stop()
        await wifiAssociations.stop()
        await captivePortalMonitor.stop()
        await sessions.stopAll()
        await filters.stopAll()
        await urlFilters.stopAll()
        await server.close(path: settings.socketPath)
        logger.info("netextd stopped")
    }
}
