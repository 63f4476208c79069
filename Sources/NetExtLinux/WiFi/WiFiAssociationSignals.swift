import NetExtCore

extension DBusSignalWatch: WiFiAssociationWatch {}

/// The signals that say a Wi-Fi interface's association may have changed, per service, and
/// which of them matter (a wake-up: the caller reads the joined networks again).
enum WiFiAssociationSignals {
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// NetworkManager (its D-Bus reference): a device's `StateChanged` (activated, disconnected,
    /// …) and a Wi-Fi device's `ActiveAccessPoint` moving (roaming, or another network).
    static let networkManagerRules = [
        "type='signal',sender='\(NetworkManagerWiFiService.service)',interface='\(NetworkManagerWiFiService.deviceInterface)',member='StateChanged'",
        "type='signal',sender='\(NetworkManagerWiFiService.service)',interface='\(propertiesInterface)',member='PropertiesChanged',"
            + "arg0='\(NetworkManagerWiFiService.wirelessInterface)'",
    ]

    /// wpa_supplicant (its D-Bus API): an interface's `State` or `CurrentBSS` changing.
    static let wpaSupplicantRules = [
        "type='signal',sender='\(WPASupplicantWiFiService.service)',interface='\(propertiesInterface)',member='PropertiesChanged',"
            + "arg0='\(WPASupplicantWiFiService.interfaceInterface)'"
    ]

    /// iwd (its station-api.txt): a station's `State`, `ConnectedNetwork` or `ConnectedAccessPoint` changing.
    static let iwdRules = [
        "type='signal',sender='\(IWDWiFiService.service)',interface='\(propertiesInterface)',member='PropertiesChanged',"
            + "arg0='\(IWDWiFiService.stationInterface)'"
    ]

    /// Whether `signal` can mean an association changed: every `StateChanged`, and a
    /// `PropertiesChanged` naming one of `properties` (a scan's `LastScan` or `BSSs` does not).
    static func matters(_ signal: DBusMessage, properties: Set<String>) -> Bool {
        guard signal.member == "PropertiesChanged" else { return true }
        guard signal.body.count >= 2, let changed = signal.body[1].dictionaryValue else { return false }
        return changed.keys.contains { properties.contains($0) }
    }

    static func watch(
        _ bus: DBusConnection, rules: [String], properties: Set<String>, failure: (any Error) -> HotspotConfigurationError,
        changed: @escaping @Sendable () -> Void
    ) throws(HotspotConfigurationError) -> any WiFiAssociationWatch {
        do {
            return try DBusSignalWatch(address: bus.address, rules: rules) { signal in
                if matters(signal, properties: properties) { changed() }
            }
        } catch {
            throw failure(error)
        }
    }
}

extension NetworkManagerWiFiService {
    /// Hears NetworkManager's device state changes and access point moves.
    public func watchAssociations(_ changed: @escaping @Sendable () -> Void) throws(HotspotConfigurationError) -> (any WiFiAssociationWatch)? {
        try WiFiAssociationSignals.watch(
            bus, rules: WiFiAssociationSignals.networkManagerRules, properties: ["ActiveAccessPoint"], failure: Self.failure, changed: changed)
    }
}

extension WPASupplicantWiFiService {
    /// Hears wpa_supplicant's interfaces change state or current BSS.
    public func watchAssociations(_ changed: @escaping @Sendable () -> Void) throws(HotspotConfigurationError) -> (any WiFiAssociationWatch)? {
        try WiFiAssociationSignals.watch(
            bus, rules: WiFiAssociationSignals.wpaSupplicantRules, properties: ["State", "CurrentBSS"], failure: Self.failure, changed: changed)
    }
}
