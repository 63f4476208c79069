import Foundation
import NetExtCore
import NetExtIPC

/// The app's content filter configuration, as Apple's `NEFilterManager.shared()`. Each app has
/// at most one; netextd runs one filter at a time (the one enabled last).
///
/// ```swift
/// var manager = try await FilterManager.shared(client: client, defaultDataProvider: "com.example.filter.data")
/// manager.providerConfiguration?.organization = "Example School"
/// manager.isEnabled = true
/// try await manager.saveToPreferences()
/// ```
public struct FilterManager: ConfigurationManager {
    /// The connection to netextd that loads, saves and starts this configuration.
    public let client: ControlClient
    /// The configuration as last loaded or saved, with the caller's unsaved changes.
    public var configuration: Configuration

    /// Loads the app's content filter configuration, or returns a new unsaved one.
    public static func shared(client: ControlClient, defaultDataProvider: String) async throws(NetExtError) -> FilterManager {
        FilterManager(client: client, configuration: try await sharedConfiguration(
            client: client, newSettings: .contentFilter(ContentFilterProtocol(filterDataProviderBundleIdentifier: defaultDataProvider))))
    }

    /// The filter settings (`providerConfiguration`, Apple's `NEFilterProviderConfiguration`).
    /// Setting nil leaves them unchanged.
    public var providerConfiguration: ContentFilterProtocol? {
        get {
            if case .contentFilter(let settings) = configuration.protocolConfiguration { return settings }
            return nil
        }
        set { if let newValue { configuration.protocolConfiguration = .contentFilter(newValue) } }
    }

    /// The running filter's state and counters.
    public func status() async throws(NetExtError) -> FilterStatus {
        try await client.call(GetFilterStatus())
    }
}
