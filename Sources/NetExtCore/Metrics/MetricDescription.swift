/// What a metric means, for the `# HELP` line of its Prometheus family, and a histogram's
/// buckets. Each module that records metrics (through swift-metrics' `Counter`, `Timer`,
/// `Recorder`) lists its own descriptions beside the names it records; the process that exports
/// them (netextd, each netext-server role) hands every list to its exporter.
public struct MetricDescription: Sendable, Hashable {
    /// The full name as exported, e.g. `netext_tunnel_handshakes_total` (counters end in `_total`,
    /// durations in `_seconds`, sizes in `_bytes`: Prometheus' naming conventions).
    public var name: String
    /// One sentence: what is counted or measured, and per what label.
    public var help: String
    /// The upper bounds of a histogram's buckets in the metric's unit (seconds for durations);
    /// nil for counters and gauges, or for the exporter's default buckets.
    public var buckets: [Double]?

    public init(_ name: String, _ help: String, buckets: [Double]? = nil) {
        self.name = name
        self.help = help
        self.buckets = buckets
    }

    /// Buckets for request and query durations: 1 ms to 10 s.
    public static let durationBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
}
