import HTTPServing
import NetExtCore

/// The metrics of one HTTP role's process: its exporter (the factory the role's own counters are
/// made with) and what the HTTP server records and serves at `GET /metrics`.
public struct HTTPRoleMetrics: Sendable {
    public let exporter: PrometheusExporter
    public let server: HTTPServerMetrics

    /// - Parameters:
    ///   - prefix: the role's metric prefix (`netext_pir`, `netext_issuer`, …).
    ///   - descriptions: what the role records besides requests.
    public init(prefix: String, descriptions: [MetricDescription]) {
        exporter = PrometheusExporter(descriptions: HTTPServerMetrics.descriptions(prefix: prefix) + descriptions)
        server = HTTPServerMetrics(prefix: prefix, factory: exporter, exposition: exporter)
    }
}
