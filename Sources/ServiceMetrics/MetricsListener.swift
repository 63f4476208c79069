import CoreMetrics
import HTTPServing
import Logging

/// The opt-in metrics endpoint of a process that serves no HTTP otherwise (netextd, the tunnel
/// server): plain HTTP on a loopback address only — `GET /metrics`, `/healthz`, `/readyz`, and 404
/// for anything else. Loopback because it has no TLS and no authentication: a Prometheus on
/// another machine scrapes it through a TLS-terminating proxy or an SSH tunnel the admin chose.
public final class MetricsListener: Sendable {
    /// Why an address is refused for the metrics listener, as the option's error says it.
    public static func refusal(of address: ListenAddress) -> String? {
        address.isLoopback
            ? nil
            : "the metrics endpoint listens on loopback only (127.0.0.0/8 or [::1]), got \(address); put a TLS-terminating proxy in front to export it further"
    }

    /// `--metrics-listen HOST:PORT`, checked: a loopback host and a port.
    public static func parse(_ text: String) throws(MetricsListenerError) -> ListenAddress {
        guard let address = ListenAddress(parsing: text) else {
            throw MetricsListenerError(message: "--metrics-listen must be HOST:PORT (e.g. 127.0.0.1:9586), got \(text)")
        }
        if let refusal = refusal(of: address) { throw MetricsListenerError(message: refusal) }
        return address
    }

    private let server: HTTPServer
    /// The address actually bound (the port is the bound one when 0 was asked for).
    public let address: ListenAddress

    private init(server: HTTPServer, address: ListenAddress) {
        self.server = server
        self.address = address
    }

    /// Binds `address` and serves `exporter` there until ``stop()``.
    public static func start(_ address: ListenAddress, exporter: PrometheusExporter, logger: Logger) async throws -> MetricsListener {
        if let refusal = refusal(of: address) { throw MetricsListenerError(message: refusal) }
        var limits = HTTPServerLimits()
        limits.maximumConnections = 16
        limits.maximumConnectionsPerSource = 16
        limits.bufferedBodyBudget = 0
        // Scrapes are not counted: the endpoint serves the process's metrics, it is not one of them.
        let server = HTTPServer(
            responder: NotFoundResponder(), logger: logger, limits: limits,
            metrics: HTTPServerMetrics(prefix: "netext_metrics_endpoint", factory: NOOPMetricsHandler.instance, exposition: exporter))
        do throws(ListenFailure) {
            let port = try await server.listen(on: address)
            return MetricsListener(server: server, address: ListenAddress(host: address.host, port: port))
        } catch {
            await server.shutdown()
            throw MetricsListenerError(message: "cannot listen for metrics on \(address): \(error.reason)")
        }
    }

    public func stop() async {
        await server.shutdown()
    }
}

/// The metrics listener could not start; the message says why in a sentence.
public struct MetricsListenerError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Everything but the built-in endpoints: 404.
struct NotFoundResponder: HTTPResponder {
    func bodyLimit(method: String, path: String) -> Int { 0 }
    func endpointLabel(path: String) -> String { "other" }
    func respond(to request: HTTPServerRequest) async -> HTTPServerResponse { .text(404, "this endpoint serves /metrics, /healthz and /readyz") }
}
