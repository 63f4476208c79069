import NetExtCore

/// The Wi-Fi service NetworkManager runs, over D-Bus (its API: NetworkManager's D-Bus reference,
/// `org.freedesktop.NetworkManager.*`). Scan lists come from each Wi-Fi device's access points,
/// the joined network from the device's active connection; configurations are NetworkManager
/// connections NetExt marks as its own (`NetworkManagerSettings`).
public final class NetworkManagerWiFiService: WiFiNetworkService {
    public let name = "NetworkManager"
    let bus: DBusConnection
    private let generateUUID: @Sendable () -> String

    static let service = "org.freedesktop.NetworkManager"
    static let managerPath = "/org/freedesktop/NetworkManager"
    static let settingsPath = "/org/freedesktop/NetworkManager/Settings"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    static let wirelessInterface = "org.freedesktop.NetworkManager.Device.Wireless"
    static let accessPointInterface = "org.freedesktop.NetworkManager.AccessPoint"
    static let activeInterface = "org.freedesktop.NetworkManager.Connection.Active"
    static let settingsInterface = "org.freedesktop.NetworkManager.Settings"
    static let connectionInterface = "org.freedesktop.NetworkManager.Settings.Connection"
    /// `NM_DEVICE_TYPE_WIFI`.
    static let wifiDeviceType: UInt64 = 2
    /// `NM_ACTIVE_CONNECTION_STATE_ACTIVATED`.
    static let activated: UInt64 = 2

    /// Uses `bus`; throws if NetworkManager does not own its name there.
    public init(bus: DBusConnection, generateUUID: @escaping @Sendable () -> String) throws(HotspotConfigurationError) {
        self.bus = bus
        self.generateUUID = generateUUID
        do {
            guard try bus.nameHasOwner(Self.service) else {
                throw HotspotConfigurationError.systemConfiguration("NetworkManager is not running on the D-Bus system bus (\(bus.address)).")
            }
        } catch let error as HotspotConfigurationError {
            throw error
        } catch {
            throw Self.failure(error)
        }
    }

    public func wifiInterfaces() throws(HotspotConfigurationError) -> [String] {
        try wifiDevices().map(\.interface)
    }

    public func scanList(interface: String?) throws(HotspotConfigurationError) -> [WiFiScanResult] {
        var results: [WiFiScanResult] = []
        for device in try wifiDevices() where interface == nil || device.interface == interface {
            let points = try guarded { () throws(DBusError) in
                try bus.call(.methodCall(destination: Self.service, path: device.path, interface: Self.wirelessInterface, member: "GetAllAccessPoints"))
            }
            for point in points.first?.arrayValue ?? [] {
                guard let path = point.stringValue, let result = try accessPoint(path, interface: device.interface) else { continue }
                results.append(result)
            }
        }
        return results.sorted { $0.signalStrength > $1.signalStrength }
    }

    public func joinedNetwork(interface: String) throws(HotspotConfigurationError) -> WiFiScanResult? {
        guard let device = try wifiDevices().first(where: { $0.interface == interface }) else { return nil }
        return try guarded { () throws(DBusError) -> WiFiScanResult? in
            guard let active = try bus.property("ActiveConnection", of: Self.deviceInterface, at: device.path, on: Self.service).stringValue,
                active != "/"
            else { return nil }
            let properties = try bus.properties(of: Self.activeInterface, at: active, on: Self.service)
            guard properties["State"]?.uintValue == Self.activated, let point = properties["SpecificObject"]?.stringValue, point != "/" else {
                return nil
            }
            return try accessPointProperties(point, interface: interface)
        }
    }

    struct Device {
        var path: String
        var interface: String
    }

    func wifiDevices() throws(HotspotConfigurationError) -> [Device] {
        try guarded { () throws(DBusError) -> [Device] in
            let body = try bus.call(.methodCall(destination: Self.service, path: Self.managerPath, interface: Self.service, member: "GetDevices"))
            var devices: [Device] = []
            for value in body.first?.arrayValue ?? [] {
                guard let path = value.stringValue else { continue }
                let properties = try bus.properties(of: Self.deviceInterface, at: path, on: Self.service)
                guard properties["DeviceType"]?.uintValue == Self.wifiDeviceType, let name = properties["Interface"]?.stringValue else { continue }
                devices.append(Device(path: path, interface: name))
            }
            return devices
        }
    }

    private func accessPoint(_ path: String, interface: String) throws(HotspotConfigurationError) -> WiFiScanResult? {
        try guarded { () throws(DBusError) in try accessPointProperties(path, interface: interface) }
    }

    private func accessPointProperties(_ path: String, interface: String) throws(DBusError) -> WiFiScanResult? {
        let properties: [String: DBusValue]
        do {
            properties = try bus.properties(of: Self.accessPointInterface, at: path, on: Self.service)
        } catch .remote {
            return nil  // the access point went away between the list and the look
        }
        guard let ssid = properties["Ssid"]?.bytesValue else { return nil }
        let privacy = (properties["Flags"]?.uintValue ?? 0) & 1 != 0
        let secure = privacy || (properties["WpaFlags"]?.uintValue ?? 0) != 0 || (properties["RsnFlags"]?.uintValue ?? 0) != 0
        return WiFiScanResult(
            ssid: String(decoding: ssid, as: UTF8.self), bssid: properties["HwAddress"]?.stringValue ?? "",
            signalStrength: Double(properties["Strength"]?.uintValue ?? 0) / 100, isSecure: secure,
            frequencyMHz: Int(properties["Frequency"]?.uintValue ?? 0), interface: interface)
    }

    /// Runs a D-Bus exchange, its failure told as NetworkManager's.
    func guarded<T>(_ body: () throws(DBusError) -> T) throws(HotspotConfigurationError) -> T {
        do { return try body() } catch { throw Self.failure(error) }
    }

    static func failure(_ error: any Error) -> HotspotConfigurationError {
        .systemConfiguration("NetworkManager: \(error)")
    }

    var uuid: String { generateUUID() }
}
