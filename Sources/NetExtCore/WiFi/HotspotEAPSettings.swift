/// Enterprise (802.1X) settings of a hotspot configuration, after NEHotspotEAPSettings.
public struct HotspotEAPSettings: Sendable, Hashable, Codable {
    /// The EAP methods, by their IANA numbers as Apple's `NEHotspotConfigurationEAPType`.
    public enum EAPType: Int, Sendable, Hashable, Codable, CaseIterable {
        case tls = 13, ttls = 21, peap = 25, fast = 43
        /// The method's name as wpa_supplicant and NetworkManager spell it.
        public var name: String {
            switch self {
            case .tls: "tls"
            case .ttls: "ttls"
            case .peap: "peap"
            case .fast: "fast"
            }
        }
    }

    /// The inner authentication of EAP-TTLS, after `NEHotspotConfigurationTTLSInnerAuthenticationType`.
    public enum TTLSInnerAuthenticationType: String, Sendable, Hashable, Codable {
        case pap, chap, mschap, mschapv2, eap
    }

    public var supportedEAPTypes: [EAPType]
    public var username: String
    public var outerIdentity: String
    public var password: String
    public var ttlsInnerAuthenticationType: TTLSInnerAuthenticationType
    /// Server certificate names the client accepts (the RADIUS server's name).
    public var trustedServerNames: [String]

    public init(
        supportedEAPTypes: [EAPType], username: String = "", outerIdentity: String = "", password: String = "",
        ttlsInnerAuthenticationType: TTLSInnerAuthenticationType = .mschapv2, trustedServerNames: [String] = []
    ) {
        self.supportedEAPTypes = supportedEAPTypes
        self.username = username
        self.outerIdentity = outerIdentity
        self.password = password
        self.ttlsInnerAuthenticationType = ttlsInnerAuthenticationType
        self.trustedServerNames = trustedServerNames
    }

    /// Refuses settings no 802.1X supplicant could use. EAP-TLS needs a client identity, which
    /// NetExt has no store for yet: refused, saying so.
    public func validate() throws(HotspotConfigurationError) {
        guard !supportedEAPTypes.isEmpty else { throw .invalidEAPSettings("The EAP settings name no EAP method (supportedEAPTypes is empty).") }
        if supportedEAPTypes.contains(.tls) {
            throw .invalidEAPSettings("EAP-TLS needs a client identity, and NetExt has no identity store yet; use PEAP, TTLS or FAST.")
        }
        guard !username.isEmpty else { throw .invalidEAPSettings("The EAP settings need a username for \(supportedEAPTypes.map(\.name).joined(separator: ", ")).") }
        guard !password.isEmpty else { throw .invalidEAPSettings("The EAP settings need a password.") }
        for name in trustedServerNames where name.isEmpty || name.contains(";") {
            throw .invalidEAPSettings("The trusted server name \"\(name)\" is empty or holds a ';'.")
        }
    }
}

/// Hotspot 2.0 (Passpoint) settings, after NEHotspotHS20Settings.
public struct HotspotHS20Settings: Sendable, Hashable, Codable {
    public var domainName: String
    public var isRoamingEnabled: Bool
    public var roamingConsortiumOIs: [String]
    public var naiRealmNames: [String]
    public var mccAndMNCs: [String]

    public init(domainName: String, roamingEnabled: Bool = true, roamingConsortiumOIs: [String] = [], naiRealmNames: [String] = [], mccAndMNCs: [String] = []) {
        self.domainName = domainName
        isRoamingEnabled = roamingEnabled
        self.roamingConsortiumOIs = roamingConsortiumOIs
        self.naiRealmNames = naiRealmNames
        self.mccAndMNCs = mccAndMNCs
    }

    /// Refuses an empty or malformed domain name, consortium OIs that are not 3 or 5 bytes of hex,
    /// MCC/MNC codes that are not six digits, realms with spaces or control characters, and (as
    /// Apple does) roaming enabled with neither consortium OIs nor realms.
    public func validate() throws(HotspotConfigurationError) {
        let labels = domainName.split(separator: ".", omittingEmptySubsequences: false)
        guard !domainName.isEmpty, domainName.utf8.count <= 253,
            labels.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 63 && $0.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F } })
        else { throw .invalidHS20DomainName("The Hotspot 2.0 domain name \"\(domainName)\" is not a domain name.") }
        for oi in roamingConsortiumOIs where !([6, 10].contains(oi.count) && oi.allSatisfy(\.isHexDigit)) {
            throw .invalidHS20Settings("The roaming consortium OI \"\(oi)\" is not 3 or 5 bytes of hex.")
        }
        // Apple's rule: each MCC/MNC string is exactly six digits (a 3-digit MCC, then the MNC).
        for code in mccAndMNCs where !(code.utf8.count == 6 && code.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })) {
            throw .invalidHS20Settings("The MCC and MNC \"\(code)\" is not six digits (a 3-digit MCC, then the MNC).")
        }
        for realm in naiRealmNames where realm.isEmpty || realm.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            throw .invalidHS20Settings("The NAI realm \"\(realm)\" is empty or holds spaces or control characters.")
        }
        // Apple refuses a roaming configuration that names no way to recognise its partners.
        if isRoamingEnabled, roamingConsortiumOIs.isEmpty, naiRealmNames.isEmpty {
            throw .invalidHS20Settings("A Hotspot 2.0 configuration with roaming enabled names roaming consortium OIs or NAI realms; it names neither.")
        }
    }
}
