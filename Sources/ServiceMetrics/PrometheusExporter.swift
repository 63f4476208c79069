import CoreMetrics
import HTTPServing
import NetExtCore
import Prometheus
import Synchronization

/// The process's metrics, kept in a swift-prometheus registry and rendered as Prometheus text for
/// `GET /metrics`. It is the swift-metrics factory every recording module is handed (`Counter`,
/// `Timer`, `Recorder` with `factory:`), so a process has one registry and no global state: two
/// servers in one test process never share counters.
///
/// swift-metrics carries no help text, so each family's `# HELP` comes from the
/// ``MetricDescription``s the process registers; a name without one is exported with its name as
/// help and listed in ``undescribedNames`` (tests require that list to stay empty). Collectors
/// registered with ``addCollector(_:)`` run before each rendering, for values read rather than
/// counted (peers, keys held, sessions by state).
public final class PrometheusExporter: MetricsFactory, MetricsExposition, Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let descriptions: [String: MetricDescription]
    private let collectors = Mutex<[@Sendable () -> Void]>([])
    private let undescribed = Mutex<Set<String>>([])
    /// Renderings one at a time, so that collectors never interleave.
    private let rendering = Mutex(())

    public init(descriptions: [MetricDescription]) {
        var byName: [String: MetricDescription] = [:]
        for description in descriptions { byName[description.name] = description }
        self.descriptions = byName
    }

    /// Runs `collect` before every rendering (it sets gauges or adds to counters from state the
    /// process keeps anyway).
    public func addCollector(_ collect: @escaping @Sendable () -> Void) {
        collectors.withLock { $0.append(collect) }
    }

    /// Names recorded without a description (none, in a process whose modules all describe theirs).
    public var undescribedNames: Set<String> { undescribed.withLock { $0 } }

    public func exposition() -> [UInt8] {
        rendering.withLock { _ in
            for collect in collectors.withLock({ $0 }) { collect() }
            return registry.emitToBuffer()
        }
    }

    /// The exposition as text.
    public func render() -> String { String(decoding: exposition(), as: UTF8.self) }

    private func descriptor(_ name: String) -> (MetricNameDescriptor, [Double]?) {
        guard let description = descriptions[name] else {
            undescribed.withLock { _ = $0.insert(name) }
            return (MetricNameDescriptor(metricName: name, unitName: "", helpText: name.replacingOccurrences(of: "_", with: " ")), nil)
        }
        return (MetricNameDescriptor(metricName: name, unitName: "", helpText: description.help), description.buckets)
    }

    // MARK: MetricsFactory

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label).0, labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label).0, labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        let (name, buckets) = descriptor(label)
        guard aggregate else { return registry.makeGauge(descriptor: name, labels: dimensions) }
        return registry.makeValueHistogram(descriptor: name, labels: dimensions, buckets: buckets ?? MetricDescription.durationBuckets)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label).0, labels: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        let (name, buckets) = descriptor(label)
        let bounds = (buckets ?? MetricDescription.durationBuckets).map { Duration.nanoseconds(Int64(($0 * 1e9).rounded())) }
        return registry.makeDurationHistogram(descriptor: name, labels: dimensions, buckets: bounds)
    }

    public func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    public func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    public func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
