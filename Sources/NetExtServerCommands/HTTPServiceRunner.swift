import ArgumentParser
import Foundation
import HTTPServing
import Logging
import NetExtLinux

/// Runs one HTTP role of netext-server until SIGTERM/SIGINT: binds `--listen`, logs the bound
/// address, calls `every` (key rotation, directory refresh) on its interval, and shuts down
/// cleanly.
enum HTTPServiceRunner {
    static func parseListen(_ text: String) throws -> ListenAddress {
        guard let address = ListenAddress(parsing: text) else { throw ValidationError("--listen must be HOST:PORT, got \(text)") }
        return address
    }

    static func run(
        _ responder: any HTTPResponder, listen: ListenAddress, serving: HTTPServingOptions, logger: Logger, metadata: Logger.Metadata = [:],
        every interval: Duration? = nil, _ periodic: (@Sendable () async -> Void)? = nil
    ) async throws {
        let server = HTTPServer(responder: responder, logger: logger, limits: serving.limits, tls: try serverTLS(serving))
        let (channel, port) = try await server.start(listen)
        announce(tls: server.servesTLS, listen: ListenAddress(host: listen.host, port: port), logger: logger, metadata: metadata)
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
        let signalName = await TerminationSignals.wait()
        logger.info("shutting down", metadata: ["signal": "\(signalName)"])
        timer?.cancel()
        try? await channel.close()
        await server.shutdown()
    }

    /// Logs the "serving" line (its `listen=` and `tls=` are what scripts and tests read), and
    /// warns when plain HTTP is served beyond loopback.
    static func announce(tls: Bool, listen: ListenAddress, logger: Logger, metadata: Logger.Metadata = [:]) {
        var fields = metadata
        fields["listen"] = "\(listen)"
        fields["tls"] = "\(tls ? "on" : "off")"
        logger.info("serving", metadata: fields)
        if !tls, !isLoopback(listen.host) {
            logger.warning("serving plain HTTP beyond loopback: give --tls-certificate and --tls-key, or put a TLS-terminating proxy in front")
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
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
