/// Why netextd stops a provider (Apple's `NEProviderStopReason`), handed to
/// `stopTunnel(reason:)` and the filters' `stopFilter(reason:)`.
public enum ProviderStopReason: String, Sendable, Hashable, Codable {
    case userInitiated
    case providerFailed
    case configurationDisabled
    case configurationRemoved
    case superceded
    /// An on-demand rule said Disconnect.
    case onDemandDisconnect
    case idleTimeout
    case daemonShutdown
}
