import ArgumentParser
import CommandLogging
import CoreMetrics
import DaemonLifecycle
import Foundation
import Logging
import NetExtCore
import NetExtDaemon
import ServiceMetrics
import Synchronization

/// `netextd`: the NetExt daemon, in the foreground.
public struct NetextdCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "netextd",
        abstract: "The NetExt daemon: configuration store, control socket, provider launcher.",
        discussion: "Runs in the foreground and logs to standard error. Under systemd (Type=notify) it reports ready once the control socket serves. SIGHUP reads the provider manifests again; SIGTERM or SIGINT stops every connection and exits.",
        version: NetExtVersion.current)

    @Option(help: "State directory (default: $NETEXT_STATE_DIR or /var/lib/netext).") var stateDir: String?
    @Option(help: "Control socket (default: $NETEXT_SOCKET or /run/netext/netextd.sock).") var socket: String?
    @Option(help: "Provider manifests directory (default: $NETEXT_PROVIDERS_DIR or /etc/netext/providers).") var providersDir: String?
    @Option(help: "Group whose members may change configurations.") var adminGroup = "netext"
    @OptionGroup var logging: LoggingOptions
    @Option(help: "Seconds a provider has to start.") var providerStartTimeout: Double = 30
    @Option(help: "Serve Prometheus metrics (control requests, status changes, sessions by status) at http://HOST:PORT/metrics; loopback addresses only. Off by default.")
    var metricsListen: String?
    @Option(help: "The connectivity check netext hotspot detect runs when not given one: a plain http URL whose real answer you know (default: $NETEXT_CONNECTIVITY_CHECK_URL, else none).")
    var connectivityCheckUrl: String?
    @Option(help: "What the connectivity check's real answer starts with (default: $NETEXT_CONNECTIVITY_CHECK_RESPONSE, else a 204 No Content answer).")
    var connectivityCheckResponse: String?
    @Flag(help: "Check the default route's interface for a captive portal on each network change (a DHCPINFORM for option 114, the portal's API, the connectivity check if configured); see netext hotspot status. Off by default.")
    var captivePortalDetection = false

    public init() {}

    public func validate() throws {
        if connectivityCheckResponse != nil && connectivityCheckUrl == nil { throw ValidationError("--connectivity-check-response goes with --connectivity-check-url") }
        // The flag, or the environment's value: either is refused here with its fault, not ignored.
        let environment = ProcessInfo.processInfo.environment
        let (url, source) = connectivityCheckUrl.map { ($0, "--connectivity-check-url") }
            ?? (environment["NETEXT_CONNECTIVITY_CHECK_URL"].flatMap { $0.isEmpty ? nil : $0 }.map { ($0, "NETEXT_CONNECTIVITY_CHECK_URL") } ?? ("", ""))
        if !url.isEmpty {
            let response = connectivityCheckUrl != nil ? connectivityCheckResponse : environment["NETEXT_CONNECTIVITY_CHECK_RESPONSE"]
            do throws(CaptivePortalError) { _ = try ConnectivityProbe.validated(url: url, expectedResponse: response) } catch {
                throw ValidationError("\(source): \(error.description)")
            }
            guard url.lowercased().hasPrefix("http://") else { throw ValidationError("\(source): the connectivity check is plain http, so that a portal can answer it") }
        }
        if let metricsListen {
            do throws(MetricsListenerError) { _ = try MetricsListener.parse(metricsListen) } catch { throw ValidationError(error.message) }
        }
    }

    public func run() async throws {
        var settings = DaemonSettings.fromEnvironment()
        if let stateDir { settings.stateDirectory = stateDir }
        if let socket { settings.socketPath = socket }
        if let providersDir { settings.providersDirectory = providersDir }
        settings.adminGroup = adminGroup
        if captivePortalDetection { settings.captivePortalMonitoring = true }
        if let connectivityCheckUrl {
            settings.connectivityCheck = try? ConnectivityProbe.validated(url: connectivityCheckUrl, expectedResponse: connectivityCheckResponse)
        }
        settings.providerStartDeadline = .milliseconds(Int(providerStartTimeout * 1000))
        logging.bootstrap()
        let logger = Logger(label: "netextd")
        do {
            let exporter = PrometheusExporter(descriptions: DaemonMetrics.descriptions)
            let metrics = DaemonMetrics(factory: metricsListen == nil ? NOOPMetricsHandler.instance : exporter)
            exporter.addCollector { metrics.collect() }
            let daemon = Daemon(settings: settings, logger: logger, metrics: metrics)
            let metricsListen = self.metricsListen
            // The daemon is started inside the main service, so a reload before it serves finds
            // nothing to reload yet and says so.
            let running = RunningBox()
            try await ProcessLifecycle(logger: logger).run(reload: {
                guard let daemon = running.value else { return .refused("netextd is still starting") }
                let (providers, refused) = daemon.reloadManifests()
                return .applied(refused.isEmpty ? "\(providers.count) providers" : "\(providers.count) providers, \(refused.count) manifests refused (see the log)")
            }) { context in
                let daemon = try await daemon.start()
                running.value = daemon
                // The endpoint the admin asked for, or no netextd: a missing endpoint would
                // otherwise go unnoticed until a scrape fails.
                var listener: MetricsListener?
                if let metricsListen {
                    do {
                        let started = try await MetricsListener.start(try MetricsListener.parse(metricsListen), exporter: exporter, logger: logger)
                        logger.info("metrics endpoint ready", metadata: ["listen": "\(started.address)"])
                        listener = started
                    } catch {
                        await daemon.stop()
                        throw NetExtError(.configurationInvalid, "\(error)")
                    }
                }
                context.ready(daemon.summary)
                await context.untilShutdown()
                await listener?.stop()
                await daemon.stop()
            }
        } catch let error as NetExtError {
            logger.critical("netextd cannot start", metadata: ["error": "\(error.message)"])
            FileHandle.standardError.write(Data("netextd: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// The started daemon, for the reload handler (set once, read from the reload service).
private final class RunningBox: Sendable {
    private let stored = Mutex<RunningDaemon?>(nil)
    var value: RunningDaemon? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
