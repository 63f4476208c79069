import Foundation
import NetExtCore
import NetExtIPC

/// A provider-run VPN configuration, as Apple's `NETunnelProviderManager`.
///
/// ```swift
/// let client = try await ControlClient.connect(appIdentifier: "com.example.vpn")
/// var manager = TunnelProviderManager(client: client, providerBundleIdentifier: "com.example.vpn.tunnel", serverAddress: "vpn.example.com")
/// manager.localizedDescription = "Example VPN"
/// manager.isEnabled = true
/// try await manager.saveToPreferences()
/// ```
public struct TunnelProviderManager: ConfigurationManager {
    /// The connection to netextd that loads, saves and starts this configuration.
    public let client: ControlClient
    /// The configuration as last loaded or saved, with the caller's unsaved changes.
    public var configuration: Configuration

    /// A new, unsaved configuration.
    public init(client: ControlClient, providerBundleIdentifier: String, serverAddress: String) {
        self.client = client
        self.configuration = Configuration(
            owner: Owner(uid: client.hello.uid, appIdentifier: client.appIdentifier),
            localizedDescription: providerBundleIdentifier,
            protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(providerBundleIdentifier: providerBundleIdentifier, serverAddress: serverAddress)))
    }

    init(client: ControlClient, configuration: Configuration) {
        self.client = client
        self.configuration = configuration
    }

    /// The tunnel provider settings (`protocolConfiguration as NETunnelProviderProtocol`).
    /// Optional as in Apple's API; setting nil leaves the settings unchanged.
    public var protocolConfiguration: TunnelProviderProtocol? {
        get {
            if case .tunnelProvider(let settings) = configuration.protocolConfiguration { return settings }
            return nil
        }
        set { if let newValue { configuration.protocolConfiguration = .tunnelProvider(newValue) } }
    }

    /// Every tunnel-provider configuration the caller's app may see.
    public static func loadAllFromPreferences(client: ControlClient) async throws(NetExtError) -> [TunnelProviderManager] {
        try await loadConfigurations(client: client)
            .filter { $0.kind == .tunnelProvider }
            .map { TunnelProviderManager(client: client, configuration: $0) }
    }
}

/// The app's personal VPN configuration (built-in IKEv2), as Apple's `NEVPNManager.shared()`.
/// Each app has at most one.
public struct VPNManager: ConfigurationManager {
    /// The connection to netextd that loads, saves and starts this configuration.
    public let client: ControlClient
    /// The configuration as last loaded or saved, with the caller's unsaved changes.
    public var configuration: Configuration

    /// Loads the app's personal VPN configuration, or returns a new unsaved one for `serverAddress`.
    public static func shared(client: ControlClient, defaultServerAddress: String = "") async throws(NetExtError) -> VPNManager {
        VPNManager(client: client, configuration: try await sharedConfiguration(
            client: client, newSettings: .personalVPN(IKEv2Protocol(serverAddress: defaultServerAddress))))
    }

    /// The IKEv2 settings.
    /// Optional as in Apple's API; setting nil leaves the settings unchanged.
    public var protocolConfiguration: IKEv2Protocol? {
        get {
            if case .personalVPN(let settings) = configuration.protocolConfiguration { return settings }
            return nil
        }
        set { if let newValue { configuration.protocolConfiguration = .personalVPN(newValue) } }
    }
}
