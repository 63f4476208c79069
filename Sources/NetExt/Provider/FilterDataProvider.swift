import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux

/// A content filter's data provider, as Apple's `NEFilterDataProvider`: netextd asks it about
/// every new flow while the filter configuration is enabled. It runs sandboxed: as an
/// unprivileged user, in a network namespace of its own with no interface up, so whatever it
/// sees it cannot send anywhere.
public protocol FilterDataProvider: AnyObject, Sendable {
    /// Called once when the filter starts; throwing fails the start (flows then follow the
    /// configuration's failure policy).
    func startFilter(context: FilterContext) async throws
    /// Called when the filter stops; the process exits after it returns.
    func stopFilter(reason: ProviderStopReason) async
    /// The verdict for a new flow, as Apple's synchronous `handleNewFlow(_:)`. netextd holds the
    /// flow's packets until it returns, up to the verdict deadline (then the failure policy
    /// decides), so it should answer at once; `.needRules` hands the flow to the control
    /// provider; `.filterData` asks to see its bytes first. Called on the flow channel's thread,
    /// one message after another.
    func handleNewFlow(_ flow: FilterFlow) -> FilterNewFlowVerdict
    /// Bytes the program sent on a flow answered `.filterData`: `readBytes` start at
    /// `readBytesStartOffset`, the first byte not yet passed, and reach at most the peek window.
    /// Bytes not passed are shown again in the next call with more behind them. The default
    /// allows the flow.
    func handleOutboundData(from flow: FilterFlow, readBytesStartOffset offset: Int, readBytes: [UInt8]) -> FilterDataVerdict
    /// Bytes the program received, as `handleOutboundData`.
    func handleInboundData(from flow: FilterFlow, readBytesStartOffset offset: Int, readBytes: [UInt8]) -> FilterDataVerdict
    /// The program closed its sending side and every byte of it was shown. The default allows.
    func handleOutboundDataComplete(for flow: FilterFlow) -> FilterDataVerdict
    /// The remote side closed and every byte of it was shown. The default allows.
    func handleInboundDataComplete(for flow: FilterFlow) -> FilterDataVerdict
    /// The control provider changed the rules (`notifyRulesChanged`); flows waiting for rules
    /// are asked again after this returns. The default does nothing.
    func handleRulesChanged() async
}

extension FilterDataProvider {
    public func handleRulesChanged() async {}
    public func handleOutboundData(from flow: FilterFlow, readBytesStartOffset offset: Int, readBytes: [UInt8]) -> FilterDataVerdict { .allow }
    public func handleInboundData(from flow: FilterFlow, readBytesStartOffset offset: Int, readBytes: [UInt8]) -> FilterDataVerdict { .allow }
    public func handleOutboundDataComplete(for flow: FilterFlow) -> FilterDataVerdict { .allow }
    public func handleInboundDataComplete(for flow: FilterFlow) -> FilterDataVerdict { .allow }
}

/// A content filter's control provider, as Apple's `NEFilterControlProvider`: a separate
/// process that may use the network, as its own user, with write access to the rules
/// directory the data provider reads. It fetches rules, writes them, and calls
/// `notifyRulesChanged()`. Its own connections are not filtered.
public protocol FilterControlProvider: AnyObject, Sendable {
    /// Called once when the filter starts; throwing fails the start. Fetch and write the first
    /// rules here, or start a task that does.
    func startFilter(context: FilterControlContext) async throws
    /// Called when the filter stops; the process exits after it returns.
    func stopFilter(reason: ProviderStopReason) async
    /// A flow the data provider could not judge (`needRules`).
    func handleNewFlow(_ flow: FilterFlow) async -> FilterControlVerdict
    /// A message from a program (`FilterManager`'s configuration, through netextd's
    /// `sendProviderMessage`, admin only); the reply goes back to it. The default answers nil.
    func handleAppMessage(_ data: Data) async -> Data?
}

extension FilterControlProvider {
    public func handleAppMessage(_ data: Data) async -> Data? { nil }
}

/// What a started control provider knows and can ask of netextd.
public struct FilterControlContext: Sendable {
    /// The content filter configuration the provider was started for.
    public let configuration: Configuration
    let session: ProviderSession

    init(configuration: Configuration, session: ProviderSession) {
        self.configuration = configuration
        self.session = session
    }

    /// The content filter settings.
    public var filterConfiguration: ContentFilterProtocol? {
        if case .contentFilter(let settings) = configuration.protocolConfiguration { return settings }
        return nil
    }

    /// `filterConfiguration.vendorConfiguration`.
    public var vendorConfiguration: [String: JSONValue] { filterConfiguration?.vendorConfiguration ?? [:] }

    /// The rules directory, writable by this provider (`$NETEXT_FILTER_RULES_DIR`).
    public var rulesDirectory: String? { ProcessInfo.processInfo.environment["NETEXT_FILTER_RULES_DIR"] }

    /// Replaces the file `name` in the rules directory with `contents` so that the data provider
    /// never reads half of it, even if this provider crashes mid-write: written beside it,
    /// synced, renamed into place (mode 0644: the data provider reads it).
    public func writeRulesFile(_ name: String, contents: [UInt8]) throws(NetExtError) {
        guard let directory = rulesDirectory else { throw NetExtError.invalid("netextd gave no rules directory (NETEXT_FILTER_RULES_DIR)") }
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw NetExtError.invalid("'\(name)' is not a file name in the rules directory")
        }
        do throws(AtomicFile.Failure) { try AtomicFile.write(contents, to: directory + "/" + name, mode: 0o644) } catch {
            throw NetExtError.readWrite("cannot write \(directory)/\(name): \(error)")
        }
    }

    /// Tells netextd the rules changed: the data provider's `handleRulesChanged()` runs, and
    /// flows waiting for rules are judged again.
    public func notifyRulesChanged() async throws(NetExtError) {
        try await session.send(.rulesChanged)
    }
}

/// What a started filter provider knows: its configuration and its read-only rules directory.
public struct FilterContext: Sendable {
    /// The content filter configuration the provider was started for.
    public let configuration: Configuration
    /// The start options netextd passed (none today; kept for Apple's `startFilter(options:)`).
    public let options: [String: JSONValue]
    let session: ProviderSession?

    /// A context not connected to netextd, for tests that call a provider's methods directly:
    /// ``apply(_:)`` throws `daemonUnavailable`.
    public init(configuration: Configuration, options: [String: JSONValue]) {
        self.init(configuration: configuration, options: options, session: nil)
    }

    init(configuration: Configuration, options: [String: JSONValue], session: ProviderSession?) {
        self.configuration = configuration
        self.options = options
        self.session = session
    }

    /// Tells netextd which flows to decide in the kernel without asking this provider (Apple's
    /// `NEFilterDataProvider.apply(_:)`): they cost no trip to user space. nil removes earlier
    /// settings. Throws what netextd refused (an invalid rule, no running filter).
    public func apply(_ settings: FilterSettings?) async throws(NetExtError) {
        if let settings { try settings.validate() }
        guard let session else { throw NetExtError(.daemonUnavailable, "this context is not connected to netextd") }
        switch await session.requestFilterSettings(settings) {
        case .filterSettingsApplied: return
        case .filterSettingsRefused(let error): throw error
        default: throw NetExtError(.protocolError, "netextd answered the filter settings with something else")
        }
    }

    /// The content filter settings.
    public var filterConfiguration: ContentFilterProtocol? {
        if case .contentFilter(let settings) = configuration.protocolConfiguration { return settings }
        return nil
    }

    /// `filterConfiguration.vendorConfiguration`.
    public var vendorConfiguration: [String: JSONValue] { filterConfiguration?.vendorConfiguration ?? [:] }

    /// The directory netextd gives the filter for its rules (readable, not writable, by the data
    /// provider), from `$NETEXT_FILTER_RULES_DIR`.
    public var rulesDirectory: String? { ProcessInfo.processInfo.environment["NETEXT_FILTER_RULES_DIR"] }
}
