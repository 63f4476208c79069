import Foundation
import NetExtCore
import NetExtIPC

/// What every provider implements, as Apple's `NETunnelProvider` lifecycle: netextd calls
/// `startTunnel(options:)` when the configuration's connection starts and `stopTunnel(reason:)`
/// when it stops. The packet tunnel, app proxy and filter providers refine this.
public protocol TunnelProvider: AnyObject, Sendable {
    /// Called once the provider is started; throwing fails the connection with that error.
    func startTunnel(options: [String: JSONValue]?, context: ProviderContext) async throws
    /// Called when the connection stops; the process exits after it returns.
    func stopTunnel(reason: ProviderMessage.StopReason) async
}

/// What a started provider knows about its configuration.
public struct ProviderContext: Sendable {
    public let configuration: Configuration
    /// The password from the start options or netextd's secret store.
    public let password: String?

    /// The tunnel provider settings, if the configuration is a tunnel-provider one.
    public var protocolConfiguration: TunnelProviderProtocol? {
        if case .tunnelProvider(let settings) = configuration.protocolConfiguration { return settings }
        return nil
    }

    /// `protocolConfiguration.serverAddress`.
    public var serverAddress: String? { protocolConfiguration?.serverAddress }

    /// `protocolConfiguration.providerConfiguration`.
    public var providerConfiguration: [String: JSONValue] { protocolConfiguration?.providerConfiguration ?? [:] }

    /// The user name from the configuration.
    public var username: String? { protocolConfiguration?.username }
}
