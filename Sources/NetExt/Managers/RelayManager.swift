import Foundation
import NetExtCore
import NetExtIPC

/// The app's network relay configuration, as Apple's `NERelayManager.shared()`: connections to
/// names within ``matchDomains`` (all, when it and ``matchFQDNs`` are empty) go through a
/// chain of MASQUE relays — TCP by CONNECT, UDP by connect-udp, over HTTP/2 with TLS — unless
/// the name is within ``excludedDomains`` or among ``excludedFQDNs``. No extension is written:
/// netextd puts enabled settings in force with its built-in relay provider.
///
/// ```swift
/// var manager = try await RelayManager.shared(client: client)
/// manager.relays = [RelayHop(http2RelayURL: "https://relay.example.com:8443")]
/// manager.matchDomains = ["office.example.com"]
/// manager.isEnabled = true
/// try await manager.saveToPreferences()
/// ```
public struct RelayManager: ConfigurationManager {
    /// The connection to netextd that loads and saves this configuration.
    public let client: ControlClient
    /// The configuration as last loaded or saved, with the caller's unsaved changes.
    public var configuration: Configuration

    /// Loads the app's relay configuration, or returns a new unsaved one.
    public static func shared(client: ControlClient) async throws(NetExtError) -> RelayManager {
        RelayManager(client: client, configuration: try await sharedConfiguration(client: client, newSettings: .relay(RelayProtocol(relays: []))))
    }

    /// Every relay configuration of the caller's app (Apple's `loadAllManagersFromPreferences`).
    public static func loadAllFromPreferences(client: ControlClient) async throws(NetExtError) -> [RelayManager] {
        try await loadConfigurations(client: client).filter { $0.kind == .relay }.map { RelayManager(client: client, configuration: $0) }
    }

    /// The relay settings as one value.
    public var relaySettings: RelayProtocol {
        get {
            if case .relay(let settings) = configuration.protocolConfiguration { return settings }
            return RelayProtocol(relays: [])
        }
        set { configuration.protocolConfiguration = .relay(newValue) }
    }

    /// The relays, the first reached directly and each next one through those before it.
    public var relays: [RelayHop] {
        get { relaySettings.relays }
        set { relaySettings.relays = newValue }
    }

    /// Domains whose names go through the relays; empty (with ``matchFQDNs``) means every name.
    public var matchDomains: [String] {
        get { relaySettings.matchDomains }
        set { relaySettings.matchDomains = newValue }
    }

    /// Domains whose names never go through the relays; they win over ``matchDomains``.
    public var excludedDomains: [String] {
        get { relaySettings.excludedDomains }
        set { relaySettings.excludedDomains = newValue }
    }

    /// Exact names that go through the relays.
    public var matchFQDNs: [String] {
        get { relaySettings.matchFQDNs }
        set { relaySettings.matchFQDNs = newValue }
    }

    /// Exact names that never go through the relays.
    public var excludedFQDNs: [String] {
        get { relaySettings.excludedFQDNs }
        set { relaySettings.excludedFQDNs = newValue }
    }

    /// The apps whose connections the relays take (per-app relays); empty: every program's.
    /// Apple binds managed apps to relays by MDM; here they are named as a per-app VPN's are.
    public var appRules: [AppRule] {
        get { relaySettings.appRules }
        set { relaySettings.appRules = newValue }
    }

    /// The Privacy Pass issuer (`https://HOST[:PORT]`) whose tokens answer the relays' `PrivateToken`
    /// challenges (RFC 9577): a NetExt addition, since Apple's relay settings name none. Its
    /// credential is a secret: give it to ``saveToPreferences(password:sharedSecret:allowsDuplicateName:)``
    /// as `password`, and netextd keeps it in its secret store (a save without one keeps the
    /// stored credential).
    public var privacyPassIssuerURL: String? {
        get { relaySettings.privacyPassIssuerURL }
        set { relaySettings.privacyPassIssuerURL = newValue }
    }
}
