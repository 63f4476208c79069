import Foundation
import NetExtCore

/// An app proxy, as Apple's `NEAppProxyProvider`: the flows of the apps bound to its
/// configuration (a per-app configuration of provider type `app-proxy`) are handed to it one by
/// one, already connected — the kernel completed the app's TCP handshake, netextd passed the
/// socket — and the provider carries them wherever it wants (a SOCKS server, an HTTP proxy, a
/// relay). Its own connections are never steered back to it.
public protocol AppProxyProvider: AnyObject, Sendable {
    /// Called once when the configuration's connection starts; throwing fails it with that
    /// error. Flows arrive only after it returns.
    func startProxy(options: [String: JSONValue]?, context: AppProxyContext) async throws
    /// Called when the connection stops; the process exits after it returns. Flows still open
    /// are the provider's to close.
    func stopProxy(with reason: ProviderStopReason) async
    /// A new TCP flow of one of the apps. Return true to take it (the provider then owns it and
    /// must close it); false declines it and NetExt closes it with a reset, as Apple's app proxy
    /// closes a declined flow. Called on the flow thread, one flow at a time: return quickly and
    /// do the flow's work elsewhere.
    func handleNewFlow(_ flow: AppProxyTCPFlow) -> Bool
    /// A new UDP flow of one of the apps (its datagrams to one destination, Apple's
    /// `handleNewUDPFlow(_:initialRemoteEndpoint:)`): true to take it, false to close it. The
    /// default declines every UDP flow.
    func handleNewUDPFlow(_ flow: AppProxyUDPFlow, initialRemoteEndpoint: NetworkEndpoint) -> Bool
    /// An app's message (`sendProviderMessage`); the answer goes back to it (nil = none).
    func handleAppMessage(_ messageData: Data) async -> Data?
}

extension AppProxyProvider {
    public func handleAppMessage(_ messageData: Data) async -> Data? { nil }
    public func handleNewUDPFlow(_ flow: AppProxyUDPFlow, initialRemoteEndpoint: NetworkEndpoint) -> Bool { false }
}

/// A transparent proxy, as Apple's `NETransparentProxyProvider`: in `startProxy` it tells netextd
/// which flows it wants (``AppProxyContext/setTransparentProxySettings(_:)``), and the flows of
/// every program that match come to `handleNewFlow`. A flow it declines (`false`) is not
/// closed: netextd sends it on to where it was going, byte for byte, as if no proxy were there.
public protocol TransparentProxyProvider: AppProxyProvider {}

/// What a started app proxy knows and can ask of netextd: its configuration and
/// `cancelProxy(with:)` (Apple's `cancelProxyWithError`).
public final class AppProxyContext: ProviderSettingsReading, Sendable {
    /// The configuration the proxy was started for.
    public let configuration: Configuration
    /// The password from the start options or netextd's secret store.
    public let password: String?
    let session: ProviderSession

    init(configuration: Configuration, password: String?, session: ProviderSession) {
        self.configuration = configuration
        self.password = password
        self.session = session
    }


    /// A transparent proxy's network rules (Apple's `setTunnelNetworkSettings` with
    /// `NETransparentProxyNetworkSettings`): from when it returns, the matching flows come to the
    /// provider; nil takes them all back. Throws netextd's refusal (naming the rule at fault).
    public func setTransparentProxySettings(_ settings: TransparentProxyNetworkSettings?) async throws(NetExtError) {
        switch await session.requestTransparentProxySettings(settings) {
        case .networkSettingsApplied: return
        case .networkSettingsRefused(let error): throw error
        default: throw NetExtError(.protocolError, "unexpected answer to setTransparentProxySettings")
        }
    }

    /// Ends the proxy from the provider's side (`cancelProxyWithError`).
    public func cancelProxy(with error: NetExtError?) async {
        try? await session.send(.failed(error ?? NetExtError(.connectionFailed, "the provider cancelled the proxy")))
        session.finish()
    }
}
