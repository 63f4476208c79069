import Foundation
import NetExtCore
import NetExtIPC

/// What every manager type shares: a configuration held by value, loaded from and saved to
/// netextd. `saveToPreferences` sends the revision it was loaded at, so a save over somebody
/// else's change fails with `configurationStale` until the manager is reloaded.
public protocol ConfigurationManager: Sendable {
    /// The connection to netextd that loads, saves and starts this configuration.
    var client: ControlClient { get }
    /// The configuration as last loaded or saved, with the caller's unsaved changes.
    var configuration: Configuration { get set }
}

extension ConfigurationManager {
    /// The configuration's identifier, fixed when it is created.
    public var id: UUID { configuration.id }

    /// The name people see (`netext list`, `netext status`); unique among what a user sees
    /// unless saved with `allowsDuplicateName`.
    public var localizedDescription: String {
        get { configuration.localizedDescription }
        set { configuration.localizedDescription = newValue }
    }

    /// Whether the configuration may run: an enabled VPN can be started (or is started on
    /// demand); an enabled filter runs.
    public var isEnabled: Bool {
        get { configuration.isEnabled }
        set { configuration.isEnabled = newValue }
    }

    /// Whether netextd starts and stops the connection by `onDemandRules`.
    public var isOnDemandEnabled: Bool {
        get { configuration.isOnDemandEnabled }
        set { configuration.isOnDemandEnabled = newValue }
    }

    /// The rules netextd evaluates, first match wins, when the network changes.
    public var onDemandRules: [OnDemandRule] {
        get { configuration.onDemandRules }
        set { configuration.onDemandRules = newValue }
    }

    /// The connection of this configuration.
    public var connection: VPNConnection { VPNConnection(client: client, configurationID: configuration.id) }

    /// Saves the configuration (creating it if new). `password` goes to the secret store.
    /// Refused when another configuration the caller can see has the same name, unless
    /// `allowsDuplicateName`, and when the configuration is enabled but its provider is not
    /// registered. Returns the configurations the save disabled (enabling an enterprise VPN
    /// disables the one enabled before).
    @discardableResult
    public mutating func saveToPreferences(
        password: String? = nil, sharedSecret: String? = nil, allowsDuplicateName: Bool = false
    ) async throws(NetExtError) -> [ConfigurationName] {
        let request = SaveConfiguration(
            configuration: configuration, password: password, sharedSecret: sharedSecret, allowsDuplicateName: allowsDuplicateName ? true : nil)
        let result = try await client.call(request)
        configuration = result.configuration
        return result.disabled ?? []
    }

    /// Reloads the configuration from netextd, dropping unsaved changes.
    public mutating func loadFromPreferences() async throws(NetExtError) {
        configuration = try await client.call(LoadConfiguration(.id(configuration.id))).configuration
    }

    /// Removes the configuration (stopping its connection first).
    public func removeFromPreferences() async throws(NetExtError) {
        _ = try await client.call(RemoveConfiguration(.id(configuration.id)))
    }

    /// Every configuration of the caller's app, of every kind.
    static func loadConfigurations(client: ControlClient) async throws(NetExtError) -> [Configuration] {
        try await client.call(ListConfigurations()).configurations
    }

    /// The app's one configuration of `settings`' kind (Apple's `shared()` managers), or a new,
    /// unsaved one named after the app with `settings`.
    static func sharedConfiguration(client: ControlClient, newSettings settings: ProtocolConfiguration) async throws(NetExtError) -> Configuration {
        if let existing = try await loadConfigurations(client: client).first(where: { $0.kind == settings.kind }) { return existing }
        return Configuration(
            owner: Owner(uid: client.hello.uid, appIdentifier: client.appIdentifier),
            localizedDescription: client.appIdentifier, protocolConfiguration: settings)
    }
}
