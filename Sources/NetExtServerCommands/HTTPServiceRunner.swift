import ArgumentParser
import DaemonLifecycle
import Foundation
import HTTPServing
import Logging
import NetExtLinux
import ServiceMetrics

/// Runs one HTTP role of netext-server until SIGTERM/SIGINT: binds `--listen`, logs the bound
/// address, tells systemd it is ready, calls `every` (key rotation, directory refresh) on its
/// interval, reloads at SIGHUP (the TLS certificate and key, then what the role reloads), and
/// shuts down cleanly.
enum HTTPServiceRunner {
    /// Parses `--listen`; plain HTTP (no `--tls-certificate`) beyond loopback is refused unless
    /// `--insecure-http` says so: a role on the network serves TLS or sits behind a proxy that does.
    static func parseListen(_ text: String, serving: HTTPServingOptions) throws -> ListenAddress {
        guard let address = ListenAddress(parsing: text) else { throw ValidationError("--listen must be HOST:PORT, got \(text)") }
        if serving.tlsCertificate == nil, !address.isLoopback, !serving.insecureHTTP {
            throw ValidationError(
                "--listen \(address) is not a loopback address and no --tls-certificate is given: serve TLS (--tls-certificate and --tls-key), "
                    + "listen on loopback behind a TLS-terminating proxy, or give --insecure-http to serve plain HTTP there anyway (labs)")
        }
        return address
    }

    static func run(
        _ responder: any HTTPResponder, metrics: HTTPRoleMetrics, listen: ListenAddress, serving: HTTPServingOptions, logger: Logger,
        metadata: Logger.Metadata = [:], reload: (@Sendable () async -> ReloadOutcome)? = nil,
        every interval: Duration? = nil, _ periodic: (@Sendable () async -> Void)? = nil
    ) async throws {
        let tls = try serverTLS(serving)
        try await run(
            HTTPServer(responder: responder, logger: logger, limits: serving.limits, tls: tls, metrics: metrics.server), tls: tls, listen: listen,
            logger: logger, metadata: metadata, reload: reload, every: interval, periodic)
    }

    /// As above, for a server the role built itself (the PIR server, with its work queue).
    static func run(
        _ server: any RunnableHTTPServer, tls: ServerTLS?, listen: ListenAddress, logger: Logger, metadata: Logger.Metadata = [:],
        reload: (@Sendable () async -> ReloadOutcome)? = nil,
        every interval: Duration? = nil, _ periodic: (@Sendable () async -> Void)? = nil
    ) async throws {
        try await serve(tls: tls, logger: logger, reload: reload) { context in
            let port = try await server.listen(on: listen)
            let bound = ListenAddress(host: listen.host, port: port)
            announce(tls: tls != nil, listen: bound, logger: logger, metadata: metadata)
            context.ready("serving on \(bound)\(tls == nil ? "" : " (TLS)")")
            let timer: Task<Void, Never>? = interval.flatMap { interval in
                periodic.map { work in
                    Task {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: interval)
                            if Task.isCancelled { break }
                            await work()
                        }
                    }
                }
            }
            await context.untilShutdown()
            timer?.cancel()
            // Drains: requests being answered finish, idle connections close.
            await server.shutdown()
        }
    }

    /// Runs `main` under the process lifecycle; SIGHUP reloads the TLS files (when serving TLS)
    /// and then runs `reload`. A refused TLS reload keeps the previous certificate and skips
    /// the role's reload (the admin fixes one thing at a time).
    private static func serve(
        tls: ServerTLS?, logger: Logger, reload: (@Sendable () async -> ReloadOutcome)?, _ main: @escaping @Sendable (ServingContext) async throws -> Void
    ) async throws {
        var combined: (@Sendable () async -> ReloadOutcome)?
        if tls != nil || reload != nil { combined = { await reloadAll(tls: tls, logger: logger, reload: reload) } }
        try await ProcessLifecycle(logger: logger).run(reload: combined, main)
    }

    /// The TLS files, then the role's own files; the first refusal ends the reload.
    private static func reloadAll(tls: ServerTLS?, logger: Logger, reload: (@Sendable () async -> ReloadOutcome)?) async -> ReloadOutcome {
        var applied: [String] = []
        if let tls {
            switch reloadTLS(tls, logger: logger) {
            case .refused(let reason): return .refused(reason)
            case .applied(let what): applied.append(what)
            }
        }
        if let reload {
            switch await reload() {
            case .refused(let reason): return .refused(reason)
            case .applied(let what): applied.append(what)
            }
        }
        return .applied(applied.joined(separator: "; "))
    }

    /// Reads the certificate and key again; new connections use them, open ones keep theirs.
    static func reloadTLS(_ tls: ServerTLS, logger: Logger) -> ReloadOutcome {
        do throws(TLSSetupError) {
            try tls.reload()
            let until = tls.notValidAfter.formatted(.iso8601)
            logger.notice("TLS certificate reloaded", metadata: ["certificate": "\(tls.certificateFile)", "valid_until": "\(until)"])
            return .applied("certificate valid until \(until)")
        } catch {
            logger.error("TLS reload refused; still serving the previous certificate", metadata: ["reason": "\(error.description)"])
            return .refused(error.description)
        }
    }

    /// Logs the "serving" line (its `listen=` and `tls=` are what scripts and tests read), and
    /// warns when plain HTTP is served beyond loopback.
    static func announce(tls: Bool, listen: ListenAddress, logger: Logger, metadata: Logger.Metadata = [:]) {
        var fields = metadata
        fields["listen"] = "\(listen)"
        fields["tls"] = "\(tls ? "on" : "off")"
        logger.info("serving", metadata: fields)
        if !tls, !listen.isLoopback {
            logger.warning("serving plain HTTP beyond loopback (--insecure-http): give --tls-certificate and --tls-key, or put a TLS-terminating proxy in front")
        }
    }

    /// Reads the TLS to serve with from the options' files, or exits 3 with the reason.
    static func serverTLS(_ options: HTTPServingOptions) throws -> ServerTLS? {
        do throws(TLSSetupError) { return try options.serverTLS() } catch { throw fail(error.description) }
    }

    /// Turns the upstream trust options into a client TLS, or exits 3 with the reason.
    static func upstreamTLS(_ options: UpstreamTrustOptions) throws -> ClientTLS? {
        do throws(TLSSetupError) { return try options.clientTLS() } catch { throw fail(error.description) }
    }

    /// Prints a startup failure the way every netext-server role does, and exits 3.
    static func fail(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("netext-server: \(message)\n".utf8))
        return ExitCode(3)
    }
}
