/// A network a hotspot helper is asked about, shaped after NEHotspotNetwork: what the Wi-Fi
/// service reports (SSID, BSSID, signal, security, how it was joined) plus what a helper says
/// back (its confidence, a password to join with). On a wired network, which this machine has
/// only, `ssid` and `bssid` are empty and `interface` names the link.
public struct HotspotNetwork: Sendable, Hashable, Codable {
    /// How sure a helper is that it can authenticate to a network (NEHotspotHelperConfidence).
    /// Ordered: `.none < .low < .high`; the highest wins the network.
    public enum Confidence: String, Sendable, Hashable, Codable, Comparable, CaseIterable {
        /// The helper does not claim the network.
        case none
        /// The helper may be able to authenticate (it recognises the kind of portal, say).
        case low
        /// The helper knows the network and can authenticate to it.
        case high

        var rank: Int {
            switch self {
            case .none: 0
            case .low: 1
            case .high: 2
            }
        }

        public static func < (lhs: Confidence, rhs: Confidence) -> Bool { lhs.rank < rhs.rank }
    }

    /// The network's name (empty on a wired network).
    public var ssid: String
    /// The access point's hardware address, `aa:bb:cc:dd:ee:ff` (empty when unknown).
    public var bssid: String
    /// The link the network is on (`wlan0`, `eth0`).
    public var interface: String
    /// The signal, 0 (none) to 1 (full); 1 on a wired network.
    public var signalStrength: Double
    /// Whether joining needs a key (WPA/WPA2/WPA3 or EAP).
    public var isSecure: Bool
    /// Whether the system joined it by itself rather than at the user's request.
    public var isAutoJoined: Bool
    /// Whether it was joined just now (set in the `evaluate` sent on joining).
    public var didJustJoin: Bool
    /// Whether the helper receiving the command is the one chosen for this network.
    public var isChosenHelper: Bool
    /// What the helper says: its confidence (in answers to `evaluate` and `filterScanList`).
    public var confidence: Confidence
    /// What the helper says: the password to join with (in answers to `filterScanList`), never
    /// logged and never shown by `netext hotspot list`.
    public var password: String?

    public init(
        ssid: String = "", bssid: String = "", interface: String, signalStrength: Double = 1, isSecure: Bool = false, isAutoJoined: Bool = false,
        didJustJoin: Bool = false, isChosenHelper: Bool = false, confidence: Confidence = .none, password: String? = nil
    ) {
        self.ssid = ssid
        self.bssid = bssid
        self.interface = interface
        self.signalStrength = signalStrength
        self.isSecure = isSecure
        self.isAutoJoined = isAutoJoined
        self.didJustJoin = didJustJoin
        self.isChosenHelper = isChosenHelper
        self.confidence = confidence
        self.password = password
    }

    /// Sets the helper's confidence (NEHotspotNetwork's `setConfidence(_:)`).
    public mutating func setConfidence(_ confidence: Confidence) { self.confidence = confidence }

    /// Sets the password to join with (NEHotspotNetwork's `setPassword(_:)`).
    public mutating func setPassword(_ password: String) { self.password = password }

    /// Whether `other` is the same network (same link, name and access point), whatever the
    /// signal, flags and a helper's annotations say.
    public func isSameNetwork(as other: HotspotNetwork) -> Bool {
        interface == other.interface && ssid == other.ssid && bssid.lowercased() == other.bssid.lowercased()
    }

    /// The network as a helper's answer may change it: confidence and password only; the rest
    /// stays what the system reported.
    func annotated(by answer: HotspotNetwork) -> HotspotNetwork {
        var network = self
        network.confidence = answer.confidence
        network.password = answer.password
        return network
    }
}

extension HotspotNetwork {
    private enum CodingKeys: String, CodingKey {
        case ssid, bssid, interface, signalStrength, isSecure, isAutoJoined, didJustJoin, isChosenHelper, confidence, password
    }

    /// Decodes a network as a helper sends it back: `interface` required, the flags false and the
    /// confidence `none` when absent, a signal outside 0…1 refused naming the key.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        interface = try container.decode(String.self, forKey: .interface)
        ssid = try container.decodeIfPresent(String.self, forKey: .ssid) ?? ""
        bssid = try container.decodeIfPresent(String.self, forKey: .bssid) ?? ""
        signalStrength = try container.decodeIfPresent(Double.self, forKey: .signalStrength) ?? 1
        guard signalStrength.isFinite, (0...1).contains(signalStrength) else {
            throw DecodingError.dataCorruptedError(forKey: .signalStrength, in: container, debugDescription: "\(signalStrength) is outside 0…1")
        }
        isSecure = try container.decodeIfPresent(Bool.self, forKey: .isSecure) ?? false
        isAutoJoined = try container.decodeIfPresent(Bool.self, forKey: .isAutoJoined) ?? false
        didJustJoin = try container.decodeIfPresent(Bool.self, forKey: .didJustJoin) ?? false
        isChosenHelper = try container.decodeIfPresent(Bool.self, forKey: .isChosenHelper) ?? false
        confidence = try container.decodeIfPresent(Confidence.self, forKey: .confidence) ?? .none
        password = try container.decodeIfPresent(String.self, forKey: .password)
    }
}

extension HotspotNetwork: CustomStringConvertible {
    /// The network for logs and the CLI: name (or link), access point, never the password.
    public var description: String {
        let name = ssid.isEmpty ? interface : "\"\(ssid)\" on \(interface)"
        return bssid.isEmpty ? name : "\(name) (\(bssid))"
    }
}
