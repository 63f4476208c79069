import Foundation
import NetExtCore
import NetExtIPC

/// A content filter's data provider, as Apple's `NEFilterDataProvider`: netextd asks it about
/// every new flow while the filter configuration is enabled. It runs sandboxed: as an
/// unprivileged user, in a network namespace of its own with no interface up, so whatever it
/// sees it cannot send anywhere.
public protocol FilterDataProvider: AnyObject, Sendable {
    /// Called once when the filter starts; throwing fails the start (flows then follow the
    /// configuration's failure policy).
    func startFilter(context: FilterContext) async throws
    /// Called when the filter stops; the process exits after it returns.
    func stopFilter(reason: ProviderMessage.StopReason) async
    /// The verdict for a new flow. netextd holds the flow's packets until it returns, up to the
    /// verdict deadline (then the failure policy decides).
    func handleNewFlow(_ flow: FilterFlow) async -> FilterVerdict
}

/// What a started filter provider knows: its configuration and its read-only rules directory.
public struct FilterContext: Sendable {
    public let configuration: Configuration
    public let options: [String: JSONValue]

    public init(configuration: Configuration, options: [String: JSONValue]) {
        self.configuration = configuration
        self.options = options
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
