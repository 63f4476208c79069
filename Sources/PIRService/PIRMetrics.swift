import Synchronization

/// Counters the server exposes at `GET /metrics` in the Prometheus text format. Nothing in
/// them identifies a user or a query.
public final class PIRMetrics: Sendable {
    struct State {
        var requests: [String: Int] = [:]      // "endpoint status" → count
        var queries = 0
        var queryMicroseconds: [Int] = []      // ring of recent per-query server times
        var queryMicrosecondsTotal = 0         // every query's server time, for the summary's _sum
        var reloads = 0
        var overloads = 0
        var reloadFailures = 0
    }

    private let state = Mutex(State())

    public init() {}

    public func countRequest(endpoint: String, status: Int) {
        state.withLock { $0.requests["\(endpoint) \(status)", default: 0] += 1 }
    }

    public func recordQuery(microseconds: Int) {
        state.withLock { state in
            state.queries += 1
            state.queryMicrosecondsTotal += microseconds
            state.queryMicroseconds.append(microseconds)
            if state.queryMicroseconds.count > 1024 { state.queryMicroseconds.removeFirst(state.queryMicroseconds.count - 1024) }
        }
    }

    /// A request refused because the work queue was full (503).
    public func countOverload() {
        state.withLock { $0.overloads += 1 }
    }

    public func recordReload(succeeded: Bool) {
        state.withLock { succeeded ? ($0.reloads += 1) : ($0.reloadFailures += 1) }
    }

    /// The exposition text; `keys` and `useCases` are gauges sampled by the caller.
    public func render(keys: Int, keyBytes: Int = 0, useCases: Int) -> String {
        state.withLock { state in
            var lines = [
                "# HELP netext_pir_requests_total HTTP requests by endpoint and status.",
                "# TYPE netext_pir_requests_total counter",
            ]
            for (key, count) in state.requests.sorted(by: { $0.key < $1.key }) {
                let parts = key.split(separator: " ")
                lines.append("netext_pir_requests_total{endpoint=\"\(parts[0])\",status=\"\(parts[1])\"} \(count)")
            }
            let sorted = state.queryMicroseconds.sorted()
            func quantile(_ q: Double) -> Double {
                sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]) / 1e6
            }
            lines += [
                "# HELP netext_pir_queries_total PIR queries answered.",
                "# TYPE netext_pir_queries_total counter",
                "netext_pir_queries_total \(state.queries)",
                "# HELP netext_pir_query_seconds Server time per query (quantiles over the last 1024 queries; sum and count over all).",
                "# TYPE netext_pir_query_seconds summary",
                "netext_pir_query_seconds{quantile=\"0.5\"} \(quantile(0.5))",
                "netext_pir_query_seconds{quantile=\"0.99\"} \(quantile(0.99))",
                "netext_pir_query_seconds_sum \(Double(state.queryMicrosecondsTotal) / 1e6)",
                "netext_pir_query_seconds_count \(state.queries)",
                "# HELP netext_pir_overloaded_total Requests refused with 503 because the work queue was full.",
                "# TYPE netext_pir_overloaded_total counter",
                "netext_pir_overloaded_total \(state.overloads)",
                "# HELP netext_pir_evaluation_keys Evaluation keys held.",
                "# TYPE netext_pir_evaluation_keys gauge",
                "netext_pir_evaluation_keys \(keys)",
                "# HELP netext_pir_evaluation_key_bytes Bytes of evaluation-key material held.",
                "# TYPE netext_pir_evaluation_key_bytes gauge",
                "netext_pir_evaluation_key_bytes \(keyBytes)",
                "# HELP netext_pir_use_cases Use cases served.",
                "# TYPE netext_pir_use_cases gauge",
                "netext_pir_use_cases \(useCases)",
                "# HELP netext_pir_reloads_total Database reloads (SIGHUP) by result.",
                "# TYPE netext_pir_reloads_total counter",
                "netext_pir_reloads_total{result=\"ok\"} \(state.reloads)",
                "netext_pir_reloads_total{result=\"failed\"} \(state.reloadFailures)",
            ]
            return lines.joined(separator: "\n") + "\n"
        }
    }
}
