/// What `netext hotspot list` shows: the Wi-Fi service's scan list annotated by the hotspot
/// helpers' answers to `filterScanList`, and which networks are joined.
public struct HotspotListReport: Sendable, Hashable, Codable {
    /// The Wi-Fi service that scanned ("NetworkManager"), or nil if none answered.
    public var service: String?
    /// Why no scan list came, when none did.
    public var failure: String?
    /// The networks, strongest first, each with the helper that claims it (if any).
    public var scanList: HotspotScanList
    /// The access points (BSSIDs) joined now.
    public var joinedBSSIDs: [String]
    /// The helpers asked, and those that did not answer in time.
    public var helpersAsked: [String]
    public var helpersSilent: [String]

    public init(
        service: String?, failure: String? = nil, scanList: HotspotScanList, joinedBSSIDs: [String] = [], helpersAsked: [String] = [],
        helpersSilent: [String] = []
    ) {
        self.service = service
        self.failure = failure
        self.scanList = scanList
        self.joinedBSSIDs = joinedBSSIDs
        self.helpersAsked = helpersAsked
        self.helpersSilent = helpersSilent
    }
}

extension HotspotNetwork {
    /// The network a Wi-Fi scan reports, as a hotspot helper sees it (no claim yet).
    public init(_ scanned: WiFiScanResult) {
        self.init(ssid: scanned.ssid, bssid: scanned.bssid, interface: scanned.interface, signalStrength: scanned.signalStrength, isSecure: scanned.isSecure)
    }
}
