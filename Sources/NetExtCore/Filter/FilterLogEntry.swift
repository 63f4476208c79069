import Foundation

/// One decided flow, as `netext filter log` shows it. Carries no payload bytes.
public struct FilterLogEntry: Sendable, Hashable, Codable {
    public var date: Date
    public var flow: FilterFlow
    public var verdict: FilterVerdict
    /// `provider`, or `failure-policy` when the provider could not answer in time.
    public var reason: String
    /// Whether netextd answered the blocked request with the block page.
    public var servedBlockPage: Bool?

    public init(date: Date, flow: FilterFlow, verdict: FilterVerdict, reason: String, servedBlockPage: Bool? = nil) {
        self.date = date
        self.flow = flow
        self.verdict = verdict
        self.reason = reason
        self.servedBlockPage = servedBlockPage
    }
}

/// What the content filter has done since it started.
public struct FilterCounters: Sendable, Hashable, Codable {
    /// Packets the kernel queued to netextd (only undecided flows' packets are queued).
    public var packetsQueued = 0
    public var flowsAsked = 0
    public var flowsAllowed = 0
    public var flowsDropped = 0
    /// Flows decided by the failure policy (provider missing, crashed or past the deadline).
    public var decidedByFailurePolicy = 0
    /// Queued packets that could not be read as IP, or held beyond the per-flow limit.
    public var malformedPackets = 0
    public var verdictErrors = 0
    /// Blocked cleartext HTTP requests answered with the block page.
    public var blockPagesServed = 0
    /// Queued packets let through while a flow's destination was still being learned (the
    /// first bytes of a TLS ClientHello or HTTP request).
    public var packetsPassedWhileLearning = 0
    /// Queued packets of flows already decided (queued just before the verdict reached the
    /// kernel).
    public var packetsOfDecidedFlows = 0
    /// Flows whose data the provider asked to see (`filterData`).
    public var flowsReadingData = 0
    /// Data and completion calls sent to the provider for them.
    public var dataQuestions = 0
    /// Queued packets of flows in their data phase.
    public var packetsOfDataFlows = 0
    /// DNS answers read for host names.
    public var dnsAnswersSeen = 0

    public init() {}
}

/// The content filter's state, for `netext filter status`.
public struct FilterStatus: Sendable, Hashable, Codable {
    public enum State: String, Sendable, Hashable, Codable {
        /// No content filter configuration is enabled.
        case off
        /// Flows are queued and judged by the running data provider.
        case running
        /// The data provider is not running (starting, or restarting after a crash); flows
        /// follow the failure policy meanwhile.
        case providerUnavailable = "provider-unavailable"
    }

    public var state: State
    public var configurationID: UUID?
    public var name: String?
    public var dataProvider: String?
    public var controlProvider: String?
    public var failClosed: Bool
    public var providerPID: Int32?
    public var controlProviderPID: Int32?
    public var providerRestarts: Int
    public var trackedFlows: Int
    public var counters: FilterCounters
    /// The last error (provider start failure, crash), if any.
    public var lastError: String?
    /// How long flows waited for their verdict (ask to answer), over the most recent flows.
    public var verdictLatency: LatencySummary?

    /// Percentiles of recent verdict latencies, in microseconds.
    public struct LatencySummary: Sendable, Hashable, Codable {
        public var samples: Int
        public var p50Microseconds: Int
        public var p99Microseconds: Int
        public init(samples: Int, p50Microseconds: Int, p99Microseconds: Int) {
            self.samples = samples
            self.p50Microseconds = p50Microseconds
            self.p99Microseconds = p99Microseconds
        }

        /// The summary of `samples` (microseconds), nil when there are none.
        public init?(_ samples: [Int]) {
            guard !samples.isEmpty else { return nil }
            let sorted = samples.sorted()
            func at(_ fraction: Double) -> Int { sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] }
            self.init(samples: sorted.count, p50Microseconds: at(0.5), p99Microseconds: at(0.99))
        }
    }

    public init(
        state: State, configurationID: UUID? = nil, name: String? = nil, dataProvider: String? = nil, controlProvider: String? = nil,
        failClosed: Bool = false, providerPID: Int32? = nil, controlProviderPID: Int32? = nil, providerRestarts: Int = 0, trackedFlows: Int = 0, counters: FilterCounters = FilterCounters(), lastError: String? = nil,
        verdictLatency: LatencySummary? = nil
    ) {
        self.verdictLatency = verdictLatency
        self.state = state
        self.configurationID = configurationID
        self.name = name
        self.dataProvider = dataProvider
        self.controlProvider = controlProvider
        self.failClosed = failClosed
        self.providerPID = providerPID
        self.controlProviderPID = controlProviderPID
        self.providerRestarts = providerRestarts
        self.trackedFlows = trackedFlows
        self.counters = counters
        self.lastError = lastError
    }
}
