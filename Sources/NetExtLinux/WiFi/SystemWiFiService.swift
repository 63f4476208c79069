import Foundation
import NetExtCore

/// Finds the Wi-Fi service this machine runs, at run time: NetworkManager on the D-Bus system
/// bus (`DBUS_SYSTEM_BUS_ADDRESS`, else the well-known socket). wpa_supplicant and iwd — the
/// services machines without NetworkManager run — are not spoken yet: found alone they are
/// named in the error.
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
        let others = ["fi.w1.wpa_supplicant1": "wpa_supplicant", "net.connman.iwd": "iwd"]
            .filter { (try? bus.nameHasOwner($0.key)) == true }.map(\.value).sorted()
        bus.close()
        if others.isEmpty { throw .systemConfiguration("No Wi-Fi service runs on the D-Bus system bus: NetworkManager is not running.") }
        throw .systemConfiguration(
            "NetworkManager is not running; \(others.joined(separator: " and ")) runs, which NetExt does not speak yet.")
    }
}
