import CoreMetrics
import HTTPServing
import NetExtCore

/// What the Privacy Pass issuer records besides requests (swift-metrics). Nothing identifies a
/// client or a credential: refusals are counted by reason only.
public struct IssuerMetrics: Sendable {
    public static let descriptions: [MetricDescription] = [
        MetricDescription("netext_issuer_tokens_issued_total", "Privacy Pass tokens signed."),
        MetricDescription(
            "netext_issuer_refused_total",
            "Issuance requests refused, by reason: malformed (unknown key, bad blinded message), replay, rate_limited (over the credential's hourly limit)."),
        MetricDescription("netext_issuer_keys", "Issuer keys published."),
    ]

    let tokensIssued: Counter
    let refusedMalformed: Counter
    let refusedReplay: Counter
    let rateLimited: Counter
    let keys: Gauge

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        tokensIssued = Counter(label: "netext_issuer_tokens_issued_total", factory: factory)
        refusedMalformed = Counter(label: "netext_issuer_refused_total", dimensions: [("reason", "malformed")], factory: factory)
        refusedReplay = Counter(label: "netext_issuer_refused_total", dimensions: [("reason", "replay")], factory: factory)
        rateLimited = Counter(label: "netext_issuer_refused_total", dimensions: [("reason", "rate_limited")], factory: factory)
        keys = Gauge(label: "netext_issuer_keys", factory: factory)
    }
}

/// What the Oblivious HTTP gateway records besides requests: requests it could not open, what it
/// forwarded or refused, and its targets' answer times and failures. Never a target's answer or
/// which target a client chose.
public struct GatewayMetrics: Sendable {
    public static let descriptions: [MetricDescription] =
        [
            MetricDescription("netext_gateway_decapsulation_failed_total", "Oblivious HTTP requests the gateway could not open (unknown key id, bad encapsulation)."),
            MetricDescription("netext_gateway_forwarded_total", "Requests the gateway forwarded to a target."),
            MetricDescription("netext_gateway_target_refused_total", "Requests for a target the gateway does not serve (answered 403 inside the encapsulation)."),
        ] + UpstreamMetrics.descriptions(prefix: "netext_gateway_target", peer: "target")

    let decapsulationFailed: Counter
    let forwarded: Counter
    let targetRefused: Counter
    let target: UpstreamMetrics

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        decapsulationFailed = Counter(label: "netext_gateway_decapsulation_failed_total", factory: factory)
        forwarded = Counter(label: "netext_gateway_forwarded_total", factory: factory)
        targetRefused = Counter(label: "netext_gateway_target_refused_total", factory: factory)
        target = UpstreamMetrics(prefix: "netext_gateway_target", factory: factory)
    }
}

/// What the Oblivious HTTP relay records besides requests: what it relayed and the gateway's
/// answer times and failures. It cannot see more.
public struct RelayMetrics: Sendable {
    public static let descriptions: [MetricDescription] =
        [MetricDescription("netext_relay_relayed_total", "Requests the relay passed to the gateway.")]
        + UpstreamMetrics.descriptions(prefix: "netext_relay_gateway", peer: "gateway")

    let relayed: Counter
    let gateway: UpstreamMetrics

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        relayed = Counter(label: "netext_relay_relayed_total", factory: factory)
        gateway = UpstreamMetrics(prefix: "netext_relay_gateway", factory: factory)
    }
}

/// What the Oblivious DoH target records besides requests: queries answered, refused and
/// sealed to an unknown key, and resolver failures. Never a name.
public struct ObliviousDoHTargetMetrics: Sendable {
    public static let descriptions: [MetricDescription] = [
        MetricDescription("netext_odoh_target_answered_total", "Oblivious DoH queries the resolver answered."),
        MetricDescription("netext_odoh_target_resolver_failed_total", "Queries the resolver gave no answer to (answered SERVFAIL)."),
        MetricDescription("netext_odoh_target_refused_total", "Queries that could not be opened or were not DNS queries (400)."),
        MetricDescription("netext_odoh_target_unknown_key_total", "Queries sealed to a key the target does not hold (401)."),
    ]

    let answered: Counter
    let resolverFailed: Counter
    let refused: Counter
    let unknownKey: Counter

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        answered = Counter(label: "netext_odoh_target_answered_total", factory: factory)
        resolverFailed = Counter(label: "netext_odoh_target_resolver_failed_total", factory: factory)
        refused = Counter(label: "netext_odoh_target_refused_total", factory: factory)
        unknownKey = Counter(label: "netext_odoh_target_unknown_key_total", factory: factory)
    }
}

/// What the Oblivious DoH proxy records besides requests: what it forwarded, what it refused,
/// and the targets' answer times and failures. It cannot see more.
public struct ObliviousDoHProxyMetrics: Sendable {
    public static let descriptions: [MetricDescription] = [
        MetricDescription("netext_odoh_proxy_forwarded_total", "Queries the proxy passed to a target."),
        MetricDescription("netext_odoh_proxy_target_refused_total", "Requests for a target not on the proxy's allow list (403)."),
    ] + UpstreamMetrics.descriptions(prefix: "netext_odoh_proxy_target", peer: "target")

    let forwarded: Counter
    let targetRefused: Counter
    let target: UpstreamMetrics

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        forwarded = Counter(label: "netext_odoh_proxy_forwarded_total", factory: factory)
        targetRefused = Counter(label: "netext_odoh_proxy_target_refused_total", factory: factory)
        target = UpstreamMetrics(prefix: "netext_odoh_proxy_target", factory: factory)
    }
}

/// A forwarding role's view of its upstream: `PREFIX_duration_seconds` (send to answer, failures
/// included) and `PREFIX_failures_total{reason=timeout|unreachable}`.
struct UpstreamMetrics: Sendable {
    static func descriptions(prefix: String, peer: String) -> [MetricDescription] {
        [
            MetricDescription("\(prefix)_duration_seconds", "Time from sending a request to the \(peer) to its answer.", buckets: MetricDescription.durationBuckets),
            MetricDescription("\(prefix)_failures_total", "Requests the \(peer) did not answer, by reason (timeout, unreachable)."),
        ]
    }

    let duration: Timer
    let timeouts: Counter
    let unreachable: Counter

    init(prefix: String, factory: any MetricsFactory) {
        duration = Timer(label: "\(prefix)_duration_seconds", factory: factory)
        timeouts = Counter(label: "\(prefix)_failures_total", dimensions: [("reason", "timeout")], factory: factory)
        unreachable = Counter(label: "\(prefix)_failures_total", dimensions: [("reason", "unreachable")], factory: factory)
    }

    /// Records one exchange's outcome (the observer `HTTPUpstream.send` calls).
    func record(nanoseconds: UInt64, failure: HTTPUpstream.Failure?) {
        duration.recordNanoseconds(Int64(clamping: nanoseconds))
        switch failure {
        case .timedOut?: timeouts.increment()
        case .unreachable?: unreachable.increment()
        case nil: break
        }
    }
}
