import NetExtCore

/// Translates a Hotspot 2.0 (Passpoint) `HotspotConfiguration` into a wpa_supplicant credential:
/// the fields of a `cred` block (wpa_supplicant.conf(5), "Credentials for automatic network
/// selection": wpa_supplicant picks the hotspot whose ANQP answers match one, with
/// `interworking=1`, `hs20=1`), as `SET_CRED ID FIELD VALUE` takes them. String values go
/// hex-encoded (wpa_supplicant reads an unquoted value of a string field as hex), so no
/// character of a password or realm can be misread on the way.
///
/// NetExt's mark is in `provisioning_sp` — the field naming who provisioned the credential —
/// as `netext:EXPIRES:NAME-IN-HEX`, the form of its network blocks' `id_str`
/// (``WPASupplicantNetworkOptions``): credentials NetExt did not add are never touched.
public enum WPASupplicantCredential {
    /// The field holding NetExt's mark.
    static let markField = "provisioning_sp"

    /// The fields for `configuration` (a `.hotspot20` one), in the order they are set. `caBundle`
    /// is the file of certificate authorities the RADIUS server's certificate must chain to (the
    /// machine's bundle: Apple's default trust). Throws for what a credential cannot say.
    public static func fields(for configuration: HotspotConfiguration, now: Double, caBundle: String?) throws(HotspotConfigurationError) -> [(name: String, value: String)] {
        guard case .hotspot20(let hs20, let eap) = configuration.security else {
            throw .invalid("Only a Hotspot 2.0 configuration becomes a wpa_supplicant credential.")
        }
        try hs20.refuseRoamingSwitchAndPLMNs(holder: "wpa_supplicant's credentials")
        guard hs20.naiRealmNames.count <= 1 else {
            throw .systemConfiguration("A wpa_supplicant credential holds one NAI realm, not \(hs20.naiRealmNames.count); name one.")
        }
        guard eap.outerIdentity.isEmpty else {
            throw .systemConfiguration("wpa_supplicant's credentials take no outer identity (it sends anonymous@REALM); leave it out.")
        }
        let method: String?
        switch Set(eap.supportedEAPTypes) {
        case [.ttls]: method = "TTLS"
        case [.peap]: method = "PEAP"
        // Several: the hotspot's NAI realm list says which it takes (wpa_supplicant chooses).
        case [.ttls, .peap]: method = nil
        default:
            throw .systemConfiguration("wpa_supplicant's Hotspot 2.0 credentials with a username and password use EAP-TTLS or PEAP, not \(eap.supportedEAPTypes.map(\.name).joined(separator: ", ")).")
        }
        let realm = hs20.naiRealmNames.first ?? hs20.domainName
        let expires = configuration.lifeTimeInDays.map { String(Int(now) + $0 * 86_400) } ?? ""
        let mark = WPASupplicantNetworkOptions.markPrefix + expires + ":" + WPASupplicantNetworkOptions.hex(Array(configuration.name.utf8))
        var strings: [(String, String)] = [("realm", realm), ("domain", hs20.domainName), ("username", eap.username), ("password", eap.password)]
        // TTLS's inner method is a phase-2 `auth=` method; EAP inside TTLS would be `autheap=`.
        if method != "PEAP", eap.ttlsInnerAuthenticationType == .eap {
            throw .systemConfiguration("NetExt does not configure EAP inside EAP-TTLS for wpa_supplicant; use PAP, CHAP, MSCHAP or MSCHAPv2.")
        }
        let inner = method == "PEAP" ? "MSCHAPV2" : eap.ttlsInnerAuthenticationType.rawValue.uppercased()
        strings.append(("phase2", "auth=" + inner))
        if !hs20.roamingConsortiumOIs.isEmpty { strings.append(("roaming_consortiums", hs20.roamingConsortiumOIs.map { $0.lowercased() }.joined(separator: ","))) }
        if let name = eap.trustedServerNames.first { strings.append(("domain_suffix_match", name)) }
        if let caBundle { strings.append(("ca_cert", caBundle)) }
        strings.append((markField, mark))
        for (name, value) in strings where value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw .invalidHS20Settings("The credential's \(name) holds a control character, which wpa_supplicant's file cannot keep.")
        }
        var fields = strings.map { (name: $0.0, value: WPASupplicantNetworkOptions.hex(Array($0.1.utf8))) }
        if let method { fields.insert((name: "eap", value: method), at: 0) }
        if configuration.joinOnce { fields.append((name: "temporary", value: "1")) }
        return fields
    }

    /// The credential ids in a `LIST_CREDS` answer: a heading line, then one line a credential,
    /// its id first and tab-separated fields after. Lines that do not start with an id are skipped.
    public static func ids(inList answer: String) -> [Int] {
        answer.split(separator: "\n").dropFirst().compactMap { line in
            let digits = line.prefix { $0 != "\t" }
            // Digits only: Int("-5") and Int("+5") parse, and are no credential's id.
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
            return Int(digits)
        }
    }

    /// NetExt's mark in a credential's `provisioning_sp` value as `GET_CRED` answers it:
    /// the configuration's name and expiry; nil for a value NetExt did not write.
    public static func mark(inProvisioningSP value: String) -> (name: String, expires: Double?)? {
        WPASupplicantNetworkOptions.mark(inText: value)
    }
}

extension HotspotHS20Settings {
    /// What neither wpa_supplicant's credentials nor iwd's hotspot files can say — roaming turned
    /// off, MCC/MNC codes (PLMNs: SIM credentials) — refused, naming `holder`.
    func refuseRoamingSwitchAndPLMNs(holder: String) throws(HotspotConfigurationError) {
        guard isRoamingEnabled else {
            throw .systemConfiguration("\(holder) cannot forbid roaming partners; configure the Hotspot 2.0 network with roaming enabled.")
        }
        guard mccAndMNCs.isEmpty else {
            throw .systemConfiguration("\(holder) match no MCC/MNC (that takes SIM credentials, which NetExt does not configure); leave mccAndMNCs out.")
        }
    }
}
