import Foundation
import NetExtCore
import NetExtLinux

/// Joins Wi-Fi networks and keeps their configurations, as Apple's
/// `NEHotspotConfigurationManager.shared`: `apply(_:)`, `removeConfiguration(forSSID:)`,
/// `removeConfiguration(forHS20DomainName:)`, `getConfiguredSSIDs()`. It works through the Wi-Fi
/// service the machine runs (NetworkManager, found at run time), which checks the caller's
/// rights as it does for any program (polkit); it sees and removes only the configurations made
/// through NetExt. A test hands it NetExtTesting's `SimulatedWiFiService` instead.
///
/// ```swift
/// let manager = try HotspotConfigurationManager.shared()
/// try await manager.apply(HotspotConfiguration(ssid: "Café Libre", passphrase: passphrase, isWEP: false))
/// ```
public struct HotspotConfigurationManager: Sendable {
    /// The Wi-Fi service configurations go to.
    public let service: any WiFiNetworkService
    private let now: @Sendable () -> Double

    /// The manager for this machine's Wi-Fi service; throws if none runs (naming what was looked for).
    public static func shared() async throws(HotspotConfigurationError) -> HotspotConfigurationManager {
        let found = await BlockingWork.run { () -> Result<any WiFiNetworkService, HotspotConfigurationError> in
            do throws(HotspotConfigurationError) { return .success(try SystemWiFiService.find()) } catch { return .failure(error) }
        }
        return HotspotConfigurationManager(service: try found.get())
    }

    /// A manager over `service`; `now` (seconds since 1970) dates lifetimes.
    public init(service: any WiFiNetworkService, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.service = service
        self.now = now
    }

    /// Keeps `configuration` and joins its network if it is in range. Throws Apple's errors:
    /// `invalid…` for what no network could use (before anything is kept), `alreadyAssociated`
    /// when the network is joined already (the configuration is kept), `systemConfiguration`
    /// when the Wi-Fi service refuses.
    public func apply(_ configuration: HotspotConfiguration) async throws(HotspotConfigurationError) {
        // Every `WiFiNetworkService.apply` validates first: nothing is checked twice.
        let service = service, time = now()
        try await Self.blocking { () throws(HotspotConfigurationError) in try service.apply(configuration, now: time) }
    }

    /// Forgets the configuration for `ssid` made through NetExt.
    public func removeConfiguration(forSSID ssid: String) async throws(HotspotConfigurationError) {
        let service = service
        try await Self.blocking { () throws(HotspotConfigurationError) in try service.removeConfiguration(named: ssid) }
    }

    /// Forgets the Hotspot 2.0 configuration for `domainName` made through NetExt.
    public func removeConfiguration(forHS20DomainName domainName: String) async throws(HotspotConfigurationError) {
        try await removeConfiguration(forSSID: domainName)
    }

    /// The SSIDs (and Hotspot 2.0 domains) of the configurations made through NetExt that are
    /// still in their lifetime.
    public func getConfiguredSSIDs() async throws(HotspotConfigurationError) -> [String] {
        let service = service, time = now()
        return try await Self.blocking { () throws(HotspotConfigurationError) in try service.configuredNames(now: time) }
    }

    private static func blocking<Value: Sendable>(
        _ work: @escaping @Sendable () throws(HotspotConfigurationError) -> Value
    ) async throws(HotspotConfigurationError) -> Value {
        let result = await BlockingWork.run { () -> Result<Value, HotspotConfigurationError> in
            do throws(HotspotConfigurationError) { return .success(try work()) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
