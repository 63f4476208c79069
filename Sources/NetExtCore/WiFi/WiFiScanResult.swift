/// One network a Wi-Fi interface sees: what a scan list or the joined network shows.
public struct WiFiScanResult: Sendable, Hashable, Codable {
    public var ssid: String
    /// The access point's hardware address (`aa:bb:cc:dd:ee:ff`).
    public var bssid: String
    /// 0 (none) to 1 (full), as `HotspotNetwork.signalStrength`.
    public var signalStrength: Double
    public var isSecure: Bool
    public var frequencyMHz: Int
    /// The Wi-Fi interface that sees it.
    public var interface: String

    public init(ssid: String, bssid: String, signalStrength: Double, isSecure: Bool, frequencyMHz: Int = 0, interface: String) {
        self.ssid = ssid
        self.bssid = bssid
        self.signalStrength = min(max(signalStrength, 0), 1)
        self.isSecure = isSecure
        self.frequencyMHz = frequencyMHz
        self.interface = interface
    }
}
