import Logging
import NetExtLinux
import ServiceLifecycle
import UnixSignals
#if canImport(Glibc)
import Glibc
#endif

/// How netextd and every netext-server role live as a system service, on ServiceLifecycle's
/// service group: the main service starts, says it is ready (systemd `Type=notify`), serves until
/// SIGTERM or SIGINT begins a graceful shutdown, and stops; SIGHUP runs the reload, one at a time,
/// and never ends the process.
///
/// ```swift
/// try await ProcessLifecycle(logger: logger).run(reload: { await server.reload() }) { context in
///     let server = try await start()
///     context.ready("serving on 127.0.0.1:8080")
///     await context.untilShutdown()
///     await server.stop()
/// }
/// ```
public struct ProcessLifecycle: Sendable {
    public let logger: Logger
    public let notifier: SystemdNotifier

    public init(logger: Logger, notifier: SystemdNotifier = SystemdNotifier()) {
        self.logger = logger
        self.notifier = notifier
    }

    /// Runs `main` until it returns, SIGTERM/SIGINT having asked it to (through
    /// ``ServingContext/untilShutdown()``). An error `main` throws ends the process's services and
    /// is rethrown as it is (an `ExitCode` keeps its code). Without `reload`, SIGHUP is logged and
    /// otherwise ignored.
    public func run(
        reload: (@Sendable () async -> ReloadOutcome)? = nil,
        _ main: @escaping @Sendable (ServingContext) async throws -> Void
    ) async throws {
        // SIGHUP's default action ends the process: ignore it until the reload service traps it.
        signal(SIGHUP, SIG_IGN)
        let context = ServingContext(notifier: notifier)
        let services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            // Shut down last (the group stops services in reverse order).
            .init(service: MainService(body: main, context: context), successTerminationBehavior: .gracefullyShutdownGroup,
                  failureTerminationBehavior: .cancelGroup, serviceName: "main"),
            .init(service: ShutdownSignalService(logger: logger, notifier: notifier), successTerminationBehavior: .gracefullyShutdownGroup,
                  serviceName: "shutdown-signals"),
            .init(service: ReloadSignalService(logger: logger, notifier: notifier, reload: reload), successTerminationBehavior: .ignore,
                  failureTerminationBehavior: .ignore, serviceName: "reload-signal"),
        ]
        try await ServiceGroup(configuration: ServiceGroupConfiguration(services: services, logger: logger)).run()
    }
}

/// What the main service of a ``ProcessLifecycle`` is given.
public struct ServingContext: Sendable {
    let notifier: SystemdNotifier

    /// Startup is over: tells systemd (`READY=1`), with a line for `systemctl status`.
    public func ready(_ status: String) { notifier.ready(status: status) }

    /// A line for `systemctl status` (what the service is doing now).
    public func status(_ text: String) { notifier.status(text) }

    /// Suspends until the process is asked to stop (SIGTERM, SIGINT, or the end of another
    /// service of the group), or the task is cancelled.
    public func untilShutdown() async { try? await gracefulShutdown() }
}

/// What a reload did: logged, and shown by `systemctl status`.
public enum ReloadOutcome: Sendable, Equatable {
    /// The new files are in use; the text says what changed.
    case applied(String)
    /// The new files were refused and the previous ones are still in use; the text says why.
    case refused(String)
}

/// Runs the body with its context.
struct MainService: Service {
    let body: @Sendable (ServingContext) async throws -> Void
    let context: ServingContext
    func run() async throws { try await body(context) }
}

/// Waits for SIGTERM or SIGINT, logs which and tells systemd; returning starts the group's
/// graceful shutdown.
struct ShutdownSignalService: Service {
    let logger: Logger
    let notifier: SystemdNotifier

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        for await signal in signals.cancelOnGracefulShutdown() {
            // UnixSignal describes itself as people write it: SIGTERM, SIGINT.
            logger.info("shutting down", metadata: ["signal": "\(signal)"])
            notifier.stopping(status: "shutting down (\(signal))")
            return
        }
    }
}

/// Runs the reload at each SIGHUP, one at a time, between `RELOADING=1` and `READY=1`.
struct ReloadSignalService: Service {
    let logger: Logger
    let notifier: SystemdNotifier
    let reload: (@Sendable () async -> ReloadOutcome)?

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            guard let reload else {
                logger.notice("SIGHUP received; this server has nothing to reload")
                continue
            }
            notifier.reloading()
            switch await reload() {
            case .applied(let summary):
                notifier.ready(status: "reloaded: \(summary)")
            case .refused(let reason):
                notifier.ready(status: "reload refused, serving the previous configuration: \(reason)")
            }
        }
    }
}
