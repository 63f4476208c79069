import NetExtCore

/// Translates a `HotspotConfiguration` into a wpa_supplicant network block (the `a{sv}` of
/// `fi.w1.wpa_supplicant1.Interface.AddNetwork`; the options are wpa_supplicant.conf(5)'s) and
/// reads back the mark NetExt leaves in the block's `id_str`: `netext:EXPIRES:NAME-IN-HEX`
/// (EXPIRES in seconds since 1970, empty for none), so NetExt never touches networks it did not add.
public enum WPASupplicantNetworkOptions {
    static let markPrefix = "netext:"

    /// The options for `configuration`. Throws for what wpa_supplicant's network blocks cannot
    /// say (SSID prefixes; Hotspot 2.0 is a `cred` block: ``WPASupplicantCredential``).
    public static func options(for configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) -> DBusValue {
        if configuration.ssidPrefix != nil, configuration.ssid.isEmpty {
            throw .systemConfiguration("wpa_supplicant cannot join networks by SSID prefix; resolve the prefix to a network in range first (WiFiNetworkService.resolvingSSIDPrefix).")
        }
        let expires = configuration.lifeTimeInDays.map { String(Int(now) + $0 * 86_400) } ?? ""
        // Byte arrays go in as hex (any SSID bytes); strings are quoted by wpa_supplicant, so
        // numbers go as integers (a string "2" for ieee80211w would arrive as "\"2\"" and be
        // refused: seen with wpa_supplicant 2.10).
        var options: [(String, DBusValue)] = [
            ("ssid", .bytes(Array(configuration.ssid.utf8))),
            ("id_str", .string(markPrefix + expires + ":" + hex(Array(configuration.name.utf8)))),
        ]
        if configuration.hidden { options.append(("scan_ssid", .int32(1))) }
        switch configuration.security {
        case .open:
            options.append(("key_mgmt", .string("NONE")))
        case .wep(let key):
            // 10 or 26 hex digits are the key's bytes; 5 or 13 characters are the key itself.
            let bytes = key.count == 10 || key.count == 26 ? unhex(key) ?? Array(key.utf8) : Array(key.utf8)
            options += [("key_mgmt", .string("NONE")), ("wep_key0", .bytes(bytes)), ("wep_tx_keyidx", .int32(0)), ("auth_alg", .string("OPEN"))]
        case .personal(let passphrase, let wpa3Only):
            // 64 hex digits are the PSK itself (unquoted, as bytes); otherwise a passphrase.
            let psk: DBusValue = passphrase.count == 64 ? unhex(passphrase).map { .bytes($0) } ?? .string(passphrase) : .string(passphrase)
            options += [("key_mgmt", .string(wpa3Only ? "SAE" : "WPA-PSK")), ("psk", psk)]
            // WPA3 personal requires protected management frames (IEEE 802.11-2020 12.4).
            if wpa3Only { options.append(("ieee80211w", .int32(2))) }
        case .enterprise(let eap):
            options.append(("key_mgmt", .string("WPA-EAP")))
            options += eapOptions(eap)
        case .hotspot20:
            // A credential, not a network block: WPASupplicantCredential.
            throw .invalid("A Hotspot 2.0 configuration is a wpa_supplicant credential, not a network block.")
        }
        return .properties(options)
    }

    /// PEAP, TTLS or FAST with a username and password (EAP-TLS needs a client certificate,
    /// which configurations here do not carry).
    static func eapOptions(_ eap: HotspotEAPSettings) -> [(String, DBusValue)] {
        var options: [(String, DBusValue)] = [
            ("eap", .string(eap.supportedEAPTypes.map { $0.name.uppercased() }.joined(separator: " "))),
            ("identity", .string(eap.username)), ("password", .string(eap.password)),
            ("phase2", .string("auth=" + (eap.supportedEAPTypes.contains(.ttls) ? eap.ttlsInnerAuthenticationType.rawValue : "mschapv2").uppercased())),
        ]
        if !eap.outerIdentity.isEmpty { options.append(("anonymous_identity", .string(eap.outerIdentity))) }
        // One name: the server's certificate must carry it (domain_match takes one FQDN).
        if let name = eap.trustedServerNames.first { options.append(("domain_match", .string(name))) }
        return options
    }

    /// NetExt's mark in a network's `Properties` (values in wpa_supplicant's configuration form,
    /// strings quoted): the configuration's name and expiry; nil for a network NetExt did not add.
    public static func mark(in properties: [String: DBusValue]) -> (name: String, expires: Double?)? {
        properties["id_str"]?.stringValue.flatMap(mark(inText:))
    }

    /// NetExt's mark in a field's text (quoted or not); nil for text NetExt did not write.
    static func mark(inText value: String) -> (name: String, expires: Double?)? {
        var text = value
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
        guard text.hasPrefix(markPrefix) else { return nil }
        let fields = text.dropFirst(markPrefix.count).split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard fields.count == 2, let name = unhex(String(fields[1])) else { return nil }
        return (String(decoding: name, as: UTF8.self), Double(fields[0]))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xf)]] }, as: UTF8.self)
    }

    static func unhex(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
