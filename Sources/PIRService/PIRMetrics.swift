import CoreMetrics
import NetExtCore

/// What the PIR service records (swift-metrics; `GET /metrics` renders it through the process's
/// exporter). Nothing in it identifies a user or a query: requests are counted by endpoint and
/// status by the HTTP server, queries only in number and server time.
public final class PIRMetrics: Sendable {
    public static let descriptions: [MetricDescription] = [
        MetricDescription("netext_pir_queries_total", "PIR queries answered."),
        MetricDescription(
            "netext_pir_query_duration_seconds", "Server time to answer one PIR query (the homomorphic evaluation).",
            buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56]),
        MetricDescription("netext_pir_overloaded_total", "Requests refused with 503 because the work queue was full."),
        MetricDescription("netext_pir_reloads_total", "Database reloads (SIGHUP), by result."),
        MetricDescription("netext_pir_evaluation_keys", "Evaluation keys held."),
        MetricDescription("netext_pir_evaluation_key_bytes", "Bytes of evaluation-key material held."),
        MetricDescription("netext_pir_use_cases", "Use cases served."),
    ]

    private let queries: Counter
    private let queryDuration: Timer
    private let overloads: Counter
    private let reloadsApplied: Counter
    private let reloadsFailed: Counter
    private let keys: Gauge
    private let keyBytes: Gauge
    private let useCases: Gauge

    /// - Parameter factory: the process's exporter (the no-op factory records nothing).
    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        queries = Counter(label: "netext_pir_queries_total", factory: factory)
        queryDuration = Timer(label: "netext_pir_query_duration_seconds", factory: factory)
        overloads = Counter(label: "netext_pir_overloaded_total", factory: factory)
        reloadsApplied = Counter(label: "netext_pir_reloads_total", dimensions: [("result", "ok")], factory: factory)
        reloadsFailed = Counter(label: "netext_pir_reloads_total", dimensions: [("result", "failed")], factory: factory)
        keys = Gauge(label: "netext_pir_evaluation_keys", factory: factory)
        keyBytes = Gauge(label: "netext_pir_evaluation_key_bytes", factory: factory)
        useCases = Gauge(label: "netext_pir_use_cases", factory: factory)
    }

    func recordQuery(nanoseconds: UInt64) {
        queries.increment()
        queryDuration.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    /// A request refused because the work queue was full (503).
    func countOverload() { overloads.increment() }

    public func recordReload(succeeded: Bool) { (succeeded ? reloadsApplied : reloadsFailed).increment() }

    /// Sets the gauges from what the service holds now (called before each rendering).
    func sample(keys held: Int, keyBytes bytes: Int, useCases served: Int) {
        keys.record(held)
        keyBytes.record(bytes)
        useCases.record(served)
    }
}

extension PIRRequestHandler {
    /// Samples the gauges (keys held, their bytes, use cases): give it to the exporter as a collector.
    public func sampleMetrics() {
        metrics.sample(keys: keys.count, keyBytes: keys.byteCount, useCases: useCaseNames.count)
    }
}
