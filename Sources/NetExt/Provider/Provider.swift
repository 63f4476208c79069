import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux
import Synchronization

/// What every provider implements, as Apple's `NETunnelProvider` lifecycle: netextd calls
/// `startTunnel(options:context:)` when the configuration's connection starts and
/// `stopTunnel(reason:)` when it stops.
public protocol TunnelProvider: AnyObject, Sendable {
    /// Called once the provider is started; throwing fails the connection with that error.
    func startTunnel(options: [String: JSONValue]?, context: ProviderContext) async throws
    /// Called when the connection stops; the process exits after it returns.
    func stopTunnel(reason: ProviderStopReason) async
    /// An app's message (`sendProviderMessage`); the answer goes back to it (nil = none).
    /// The default answers nothing.
    func handleAppMessage(_ messageData: Data) async -> Data?
}

extension TunnelProvider {
    public func handleAppMessage(_ messageData: Data) async -> Data? { nil }
}

/// What a started provider knows and can ask of netextd, as the members Apple's
/// `NEPacketTunnelProvider` inherits: the configuration, `setTunnelNetworkSettings`,
/// `packetFlow`, `reasserting`, `cancelTunnelWithError`.
public final class ProviderContext: ProviderSettingsReading, Sendable {
    /// The configuration the connection was started for.
    public let configuration: Configuration
    /// The password from the start options or netextd's secret store.
    public let password: String?
    let session: ProviderSession
    private let flow = Mutex<TunPacketFlow?>(nil)

    init(configuration: Configuration, password: String?, session: ProviderSession) {
        self.configuration = configuration
        self.password = password
        self.session = session
    }


    /// The tunnel's packets, once network settings were applied (`NEPacketTunnelProvider.packetFlow`).
    public var packetFlow: TunPacketFlow? { flow.withLock { $0 } }

    /// Asks netextd to configure the tunnel interface, routes, DNS and MTU; nil clears them.
    /// The first call with settings creates the TUN interface and makes `packetFlow` available.
    @discardableResult
    public func setTunnelNetworkSettings(_ settings: PacketTunnelNetworkSettings?) async throws(NetExtError) -> (interface: String, mtu: Int)? {
        switch try await session.requestSettings(settings) {
        case .networkSettingsApplied(let interface, let mtu):
            guard settings != nil else { return nil }
            let descriptor: Int32
            do { descriptor = try SocketPair.receiveDescriptor(over: session.descriptorSocket) } catch {
                throw NetExtError(.providerFailed, "netextd applied the settings but the TUN descriptor did not arrive: \(error)")
            }
            let installed = flow.withLock { current -> Bool in
                if current == nil {
                    current = TunPacketFlow(fileDescriptor: descriptor, interface: interface, mtu: mtu)
                    return true
                }
                return false
            }
            if !installed { SocketPair.close(descriptor) }
            return (interface, mtu)
        case .networkSettingsRefused(let error):
            throw error
        default:
            throw NetExtError(.protocolError, "unexpected answer to setTunnelNetworkSettings")
        }
    }

    /// Tells netextd the tunnel is reconnecting (`reasserting = true`) or back (`false`).
    public func setReasserting(_ value: Bool) async {
        try? await session.send(.reasserting(value))
    }

    /// Tells netextd what the provider knows of its connection (the server it reaches, its
    /// latest handshake), for `netext status`. Call it whenever that changes; NetExt's own
    /// addition, optional (a provider that never calls it shows no endpoint or handshake lines).
    public func reportTunnelStatistics(_ statistics: TunnelStatistics) async {
        try? await session.send(.tunnelStatistics(statistics))
    }

    /// Ends the tunnel from the provider's side (`cancelTunnelWithError`).
    public func cancelTunnel(with error: NetExtError?) async {
        try? await session.send(.failed(error ?? NetExtError(.connectionFailed, "the provider cancelled the tunnel")))
        session.finish()
    }
}

/// What every started provider's context reads from its configuration, as the members of
/// Apple's `NETunnelProvider.protocolConfiguration`.
public protocol ProviderSettingsReading {
    /// The configuration the provider was started for.
    var configuration: Configuration { get }
}

extension ProviderSettingsReading {
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
