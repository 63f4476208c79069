import CoreMetrics
import NetExtCore
import Synchronization

/// Something that can render the process's metrics as Prometheus text (format 0.0.4): what
/// `GET /metrics` answers. The exporter lives in ServiceMetrics; HTTPServing only serves it.
public protocol MetricsExposition: Sendable {
    /// The exposition text, collected now.
    func exposition() -> [UInt8]
}

/// What an `HTTPServer` records about every request it answers, as swift-metrics: a counter
/// `PREFIX_requests_total{endpoint,status}` and a histogram `PREFIX_request_duration_seconds{endpoint}`
/// (from the request's head to its answer). Endpoints are the responder's low-cardinality labels,
/// never a path a client chose. With an `exposition`, the server answers `GET /metrics` itself.
public final class HTTPServerMetrics: Sendable {
    let prefix: String
    let factory: any MetricsFactory
    let exposition: (any MetricsExposition)?
    /// The series made so far: a counter per endpoint and status, a timer per endpoint.
    private let series = Mutex<(requests: [String: CoreMetrics.Counter], durations: [String: CoreMetrics.Timer])>(([:], [:]))

    /// - Parameters:
    ///   - prefix: the role's metric prefix, e.g. `netext_pir`.
    ///   - factory: where the counters and histograms are made (the process's exporter).
    ///   - exposition: what `GET /metrics` serves (nil: the path is the responder's).
    public init(prefix: String, factory: any MetricsFactory, exposition: (any MetricsExposition)?) {
        self.prefix = prefix
        self.factory = factory
        self.exposition = exposition
    }

    /// The descriptions of what every HTTP role records under `prefix`.
    public static func descriptions(prefix: String) -> [MetricDescription] {
        [
            MetricDescription("\(prefix)_requests_total", "HTTP requests answered, by endpoint and status."),
            MetricDescription(
                "\(prefix)_request_duration_seconds", "Time from a request's head to its answer, by endpoint.",
                buckets: MetricDescription.durationBuckets),
        ]
    }

    func record(endpoint: String, status: Int, nanoseconds: Int64) {
        let factory = self.factory, prefix = self.prefix
        let (counter, timer) = series.withLock { series in
            let key = "\(endpoint) \(status)"
            let counter = series.requests[key] ?? CoreMetrics.Counter(
                label: "\(prefix)_requests_total", dimensions: [("endpoint", endpoint), ("status", String(status))], factory: factory)
            series.requests[key] = counter
            let timer = series.durations[endpoint] ?? CoreMetrics.Timer(
                label: "\(prefix)_request_duration_seconds", dimensions: [("endpoint", endpoint)], factory: factory)
            series.durations[endpoint] = timer
            return (counter, timer)
        }
        counter.increment()
        timer.recordNanoseconds(nanoseconds)
    }
}
