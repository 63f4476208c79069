import BloomFilter
import Foundation
import Logging
import NetExtCore
import NetExtIPC
import PrivacyPass
import URLFilter

/// Runs the URL filter while a URL filter configuration is enabled (the one enabled last):
/// the control provider that fetches the prefilter — at start and every
/// `prefilterFetchInterval` — and the verdict path programs ask through `urlFilterVerdict`:
/// Bloom prefilter, then a private PIR lookup authenticated with Privacy Pass tokens and sent
/// through the Oblivious HTTP relay. Programs get one verdict per URL they ask about, never the
/// prefilter or anything about other programs' URLs.
public actor URLFilterController {
    struct Active {
        var configuration: Configuration
        var settings: URLFilterProtocol
        var supervisor: FilterProviderKeeper
        var lookup: URLFilterLookup
        var tokens: PrivacyPassClient
        var tokenStore: PrivateTokenStore
        var refresher: Task<Void, Never>?
        var prefilter: (bits: Int, hashes: Int, fetchedAt: Date)?
        var fetches = 0
        var lastError: String?
        var counters = URLFilterStatus.Counters()
    }

    let registry: ProviderRegistry
    let secrets: SecretStore
    let logger: Logger
    let stateDirectory: String
    /// Replaces `prefilterFetchInterval` when set (labs and tests; `NETEXT_PREFILTER_INTERVAL`).
    let fetchIntervalOverride: Double?
    let startDeadline: Duration
    /// Launches and watches the control provider.
    let providers: ProviderSupervisor
    var active: Active?
    var pendingFetches: [Int: CheckedContinuation<ProviderMessage?, Never>] = [:]
    var nextFetchID = 0

    public init(registry: ProviderRegistry, secrets: SecretStore, logger: Logger, stateDirectory: String,
                fetchIntervalOverride: Double? = nil, startDeadline: Duration = .seconds(15),
                launcher: any ProviderLauncher = ProcessProviderLauncher()) {
        providers = ProviderSupervisor(launcher: launcher)
        self.registry = registry
        self.secrets = secrets
        self.logger = logger
        self.stateDirectory = stateDirectory
        self.fetchIntervalOverride = fetchIntervalOverride
        self.startDeadline = startDeadline
    }

    /// At netextd start: starts the enabled URL filter, if any.
    public func restore(_ configurations: [Configuration]) async {
        if let enabled = configurations.last(where: { $0.isEnabled && $0.kind == .urlFilter }) {
            await configurationChanged(enabled, removed: false)
        }
    }

    /// Follows a saved or removed configuration.
    public func configurationChanged(_ configuration: Configuration, removed: Bool) async {
        guard case .urlFilter(let settings) = configuration.protocolConfiguration else { return }
        switch ActiveConfigurationChange(active: active?.configuration, incoming: configuration, removed: removed) {
        case .ignore: return
        case let .stop(reason):
            await deactivate(reason: reason)
            return
        case .refresh:
            active?.configuration = configuration
            return
        case let .start(stopping):
            if let stopping { await deactivate(reason: stopping) }
        }
        do throws(NetExtError) { try await activate(configuration, settings: settings) } catch {
            logger.error("URL filter could not start", metadata: ["configuration": "\(configuration.id)", "error": "\(error)"])
        }
    }

    /// Stops the filter (daemon shutdown).
    public func stopAll() async {
        if active != nil { await deactivate(reason: .daemonShutdown) }
    }

    /// The verdict for one URL; with no URL filter enabled, everything is allowed.
    public func verdict(for url: String) async -> URLFilterVerdictResult {
        guard let lookup = active?.lookup else { return URLFilterVerdictResult(verdict: .allow, effective: .allow) }
        let decision = await lookup.decision(for: url)
        if active?.lookup === lookup { count(decision) }
        return URLFilterVerdictResult(verdict: Self.map(decision.verdict), effective: Self.map(decision.effective))
    }

    public func status() async -> URLFilterStatus {
        guard let active else { return URLFilterStatus(state: .off) }
        var status = URLFilterStatus(state: active.prefilter != nil ? .running : (active.lastError != nil ? .failed : .starting))
        status.configurationID = active.configuration.id
        status.name = active.configuration.localizedDescription
        status.controlProvider = active.settings.controlProviderBundleIdentifier
        status.failClosed = active.settings.shouldFailClosed
        status.pirServerURL = active.settings.pirServerURL
        status.relayURL = active.settings.relayURL
        status.prefilterBits = active.prefilter?.bits
        status.prefilterHashes = active.prefilter?.hashes
        status.prefilterFetchedAt = active.prefilter?.fetchedAt
        status.prefilterFetches = active.fetches
        status.prefilterFetchInterval = fetchIntervalOverride ?? active.settings.prefilterFetchInterval
        status.tokensAvailable = active.tokenStore.count
        status.tokensFetched = await active.tokens.fetchedTokens
        status.cachedVerdicts = await active.lookup.cachedCount
        status.counters = active.counters
        status.lastError = active.lastError
        return status
    }

    static func map(_ verdict: URLFilterVerdict) -> URLFilterVerdictResult.Verdict {
        switch verdict {
        case .allow: .allow
        case .deny: .deny
        case .unknown: .unknown
        }
    }

    private func count(_ decision: URLFilterLookup.Decision) {
        switch decision.source {
        case .prefilter: active?.counters.prefilterNegative += 1
        case .cache: active?.counters.cached += 1
        case .pir: active?.counters.privateLookups += 1
        case .failure: active?.counters.unknown += 1
        }
        if decision.effective == .deny { active?.counters.denied += 1 }
    }
}
