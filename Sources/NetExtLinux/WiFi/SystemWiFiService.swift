import Foundation
import NetExtCore

/// Finds the Wi-Fi service this machine runs, at run time, on the D-Bus system bus
/// (`DBUS_SYSTEM_BUS_ADDRESS`, else the well-known socket): NetworkManager first, then
/// wpa_supplicant, then iwd.
public enum SystemWiFiService {
    /// The machine's Wi-Fi service; throws saying what was looked for and not found.
    public static func find(timeoutSeconds: Double = 5) throws(HotspotConfigurationError) -> any WiFiNetworkService {
        let bus: DBusConnection
        do {
            bus = try DBusConnection.system(timeoutSeconds: timeoutSeconds)
        } catch {
            throw .systemConfiguration("No Wi-Fi service can be reached: \(error)")
        }
        if (try? bus.nameHasOwner(NetworkManagerWiFiService.service)) == true {
            return try NetworkManagerWiFiService(bus: bus) { UUID().uuidString.lowercased() }
        }
        if (try? bus.nameHasOwner(WPASupplicantWiFiService.service)) == true {
            return try WPASupplicantWiFiService(bus: bus)
        }
        if (try? bus.nameHasOwner(IWDWiFiService.service)) == true {
            return try IWDWiFiService(bus: bus)
        }
        bus.close()
        throw .systemConfiguration("No Wi-Fi service runs on the D-Bus system bus: neither NetworkManager, wpa_supplicant nor iwd is running.")
    }
}
