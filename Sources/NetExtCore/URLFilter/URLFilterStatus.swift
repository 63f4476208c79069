import Foundation

/// The URL filter's state in netextd (`netext urlfilter status`, `URLFilterManager.status()`).
/// Counts only: nothing in it names a URL.
public struct URLFilterStatus: Sendable, Hashable, Codable {
    public enum State: String, Sendable, Hashable, Codable {
        /// No URL filter configuration is enabled.
        case off
        /// Enabled, waiting for the control provider's first prefilter.
        case starting
        /// Verdicts are served.
        case running
        /// The control provider could not deliver a prefilter; verdicts follow the failure policy.
        case failed
    }

    /// Where the verdicts came from since the filter started.
    public struct Counters: Sendable, Hashable, Codable {
        public var prefilterNegative = 0
        public var cached = 0
        public var privateLookups = 0
        public var denied = 0
        public var unknown = 0
        public init() {}
    }

    public var state: State
    public var configurationID: UUID?
    public var name: String?
    public var controlProvider: String?
    public var failClosed: Bool
    public var pirServerURL: String?
    public var relayURL: String?
    public var prefilterBits: Int?
    public var prefilterHashes: Int?
    public var prefilterFetchedAt: Date?
    public var prefilterFetches: Int
    public var prefilterFetchInterval: Double?
    public var tokensAvailable: Int
    public var tokensFetched: Int
    public var cachedVerdicts: Int
    public var counters: Counters
    public var lastError: String?

    public init(state: State) {
        self.state = state
        failClosed = false
        prefilterFetches = 0
        tokensAvailable = 0
        tokensFetched = 0
        cachedVerdicts = 0
        counters = Counters()
    }
}

/// The answer to a program asking whether a URL may load (`URLFilter.verdict(for:)`).
public struct URLFilterVerdictResult: Sendable, Hashable, Codable {
    public enum Verdict: String, Sendable, Hashable, Codable {
        case allow, deny, unknown
    }

    /// What the filter decided; `unknown` when no decision was possible.
    public var verdict: Verdict
    /// What to do: `verdict`, or for `unknown` the configuration's failure policy.
    public var effective: Verdict

    public init(verdict: Verdict, effective: Verdict) {
        self.verdict = verdict
        self.effective = effective
    }
}
