/// A Wi-Fi network to join, after NEHotspotConfiguration: open, WEP, WPA/WPA2/WPA3 personal,
/// enterprise (EAP) or Hotspot 2.0, once or for a number of days.
public struct HotspotConfiguration: Sendable, Hashable, Codable {
    /// How the network authenticates.
    public enum Security: Sendable, Hashable, Codable {
        case open
        case wep(passphrase: String)
        /// WPA2 personal (pre-shared key), or WPA3 (SAE) only when `wpa3Only`.
        case personal(passphrase: String, wpa3Only: Bool)
        case enterprise(HotspotEAPSettings)
        case hotspot20(HotspotHS20Settings, HotspotEAPSettings)
    }

    /// The network's name; empty for a Hotspot 2.0 configuration (the operator's domain names it),
    /// and for a prefix configuration until a service resolves it to a network in range.
    public var ssid: String
    /// Joins any network whose SSID starts with this (Apple's `init(ssidPrefix:)`), when not nil.
    public var ssidPrefix: String?
    public var security: Security
    /// Join this time only: the configuration is not kept.
    public var joinOnce = false
    /// Days the configuration is kept; nil keeps it until removed.
    public var lifeTimeInDays: Int?
    /// The network does not broadcast its SSID.
    public var hidden = false

    /// An open network.
    public init(ssid: String) {
        self.ssid = ssid
        security = .open
    }

    /// A WEP or WPA/WPA2 personal network, as Apple's `init(ssid:passphrase:isWEP:)`.
    public init(ssid: String, passphrase: String, isWEP: Bool) {
        self.ssid = ssid
        security = isWEP ? .wep(passphrase: passphrase) : .personal(passphrase: passphrase, wpa3Only: false)
    }

    /// An enterprise network.
    public init(ssid: String, eapSettings: HotspotEAPSettings) {
        self.ssid = ssid
        security = .enterprise(eapSettings)
    }

    /// A Hotspot 2.0 network.
    public init(hs20Settings: HotspotHS20Settings, eapSettings: HotspotEAPSettings) {
        ssid = ""
        security = .hotspot20(hs20Settings, eapSettings)
    }

    /// Any network whose SSID starts with `ssidPrefix`, with `security`.
    public init(ssidPrefix: String, security: Security = .open) {
        ssid = ""
        self.ssidPrefix = ssidPrefix
        self.security = security
    }

    /// Whether a network named `ssid` is this configuration's: its SSID, or for a prefix
    /// configuration any SSID whose bytes start with the prefix's.
    public func matches(ssid candidate: String) -> Bool {
        if let ssidPrefix { return Array(candidate.utf8).starts(with: Array(ssidPrefix.utf8)) }
        return !ssid.isEmpty && ssid == candidate
    }

    /// The strongest network of `scanList` this configuration matches (a scan list comes
    /// strongest first; ties keep its order).
    public func ssidMatching(_ scanList: [WiFiScanResult]) -> WiFiScanResult? {
        scanList.filter { matches(ssid: $0.ssid) }.max { $0.signalStrength < $1.signalStrength }
    }

    /// The name the configuration is known by: its SSID, prefix (with `*`) or Hotspot 2.0 domain.
    public var name: String {
        if let ssidPrefix { return ssidPrefix + "*" }
        if case .hotspot20(let settings, _) = security { return settings.domainName }
        return ssid
    }

    /// Refuses what no Wi-Fi service could join, naming what is wrong (the checks Apple makes:
    /// an SSID of 1–32 bytes; a WPA passphrase of 8–63 printable ASCII characters or 64 hex
    /// digits, IEEE 802.11i-2004 H.4.1; a WEP key of 5 or 13 characters or 10 or 26 hex digits).
    public func validate() throws(HotspotConfigurationError) {
        if let ssidPrefix {
            guard (1...32).contains(ssidPrefix.utf8.count) else {
                throw .invalidSSIDPrefix("The SSID prefix \"\(ssidPrefix)\" must be 1 to 32 bytes, not \(ssidPrefix.utf8.count).")
            }
            // Resolved to a network in range (WiFiNetworkService.resolvingSSIDPrefix): that SSID.
            if !ssid.isEmpty {
                guard ssid.utf8.count <= 32, matches(ssid: ssid) else {
                    throw .invalidSSID("The SSID \"\(ssid)\" does not start with the prefix \"\(ssidPrefix)\" or is longer than 32 bytes.")
                }
            }
        } else if case .hotspot20 = security {
            guard ssid.isEmpty else { throw .invalid("A Hotspot 2.0 configuration names no SSID (the operator's domain chooses networks).") }
        } else {
            guard (1...32).contains(ssid.utf8.count) else {
                throw .invalidSSID("The SSID \"\(ssid)\" must be 1 to 32 bytes, not \(ssid.utf8.count).")
            }
        }
        if let lifeTimeInDays, !(1...3_650).contains(lifeTimeInDays) {
            throw .invalid("lifeTimeInDays must be 1 to 3650, not \(lifeTimeInDays).")
        }
        if joinOnce, lifeTimeInDays != nil { throw .invalid("A joinOnce configuration cannot also have lifeTimeInDays.") }
        switch security {
        case .open: break
        case .wep(let passphrase):
            let hex = passphrase.allSatisfy(\.isHexDigit) && [10, 26].contains(passphrase.count)
            let ascii = passphrase.allSatisfy(Self.isPrintableASCII) && [5, 13].contains(passphrase.count)
            guard hex || ascii else {
                throw .invalidWEPPassphrase("A WEP key is 5 or 13 ASCII characters or 10 or 26 hex digits, not \(passphrase.count) characters.")
            }
        case .personal(let passphrase, _):
            let hex = passphrase.count == 64 && passphrase.allSatisfy(\.isHexDigit)
            let ascii = (8...63).contains(passphrase.count) && passphrase.allSatisfy(Self.isPrintableASCII)
            guard hex || ascii else {
                throw .invalidWPAPassphrase("A WPA passphrase is 8 to 63 printable ASCII characters or 64 hex digits, not \(passphrase.count) characters.")
            }
        case .enterprise(let eap):
            try eap.validate()
        case .hotspot20(let hs20, let eap):
            try hs20.validate()
            try eap.validate()
        }
    }

    private static func isPrintableASCII(_ character: Character) -> Bool {
        guard let value = character.asciiValue else { return false }
        return value >= 0x20 && value < 0x7F
    }
}
