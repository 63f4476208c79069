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

    /// A new, unsaved per-app VPN, as Apple's `NETunnelProviderManager.forPerAppVPN()`: it
    /// carries only the flows of the apps in ``appRules``, to any destination; its `VPNUUID`
    /// (`perAppUUID`) is the configuration's id.
    public static func forPerAppVPN(client: ControlClient, providerBundleIdentifier: String, serverAddress: String) -> TunnelProviderManager {
        var manager = TunnelProviderManager(client: client, providerBundleIdentifier: providerBundleIdentifier, serverAddress: serverAddress)
        let uuid = manager.configuration.id.uuidString
        manager.protocolConfiguration?.perAppUUID = uuid
        return manager
    }

    /// How the tunnel picks the flows it carries, as Apple's `NETunnelProviderRoutingMethod`.
    public enum RoutingMethod: Sendable, Hashable {
        /// By destination address (the provider's routes).
        case destinationIP
        /// By the app a flow comes from (a per-app VPN).
        case sourceApplication
    }

    /// `.sourceApplication` for a per-app VPN, else `.destinationIP`.
    public var routingMethod: RoutingMethod { protocolConfiguration?.isPerApp == true ? .sourceApplication : .destinationIP }

    /// A per-app VPN's apps (Apple's `appRules`): their every flow enters the tunnel. Saving
    /// rules on a tunnel that routes by destination is refused; use ``excludedAppRules`` there.
    public var appRules: [AppRule] {
        get { protocolConfiguration?.appRules ?? [] }
        set { protocolConfiguration?.appRules = newValue }
    }

    /// A tunnel that routes by destination: the apps whose flows bypass it (exclude mode, also
    /// past its kill switch). NetExt's own; Apple's systems have no counterpart.
    public var excludedAppRules: [AppRule] {
        get { protocolConfiguration?.excludedAppRules ?? [] }
        set { protocolConfiguration?.excludedAppRules = newValue }
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
