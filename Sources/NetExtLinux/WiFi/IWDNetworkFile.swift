import NetExtCore

/// A `HotspotConfiguration` as the network file iwd reads from its state directory
/// (iwd.network(5)): the name is the SSID — as it is when made only of letters, digits, spaces,
/// `_` and `-`, else `=` and its lower-case hex — then `.open`, `.psk` or `.8021x`; the content
/// is keyfile groups (`[Settings]`, `[Security]`), each string value escaped as the format asks
/// (`\\`, `\n`, `\r`, `\t`, and a leading space as `\s`). NetExt marks its own files with a group
/// of its own, `[NetExt]` (`Name` in hex, `Expires` in seconds since 1970), which iwd carries
/// along when it writes the file again: files without it are never touched.
public enum IWDNetworkFile {
    public static let markGroup = "NetExt"
    /// The endings iwd reads.
    static let extensions = ["open", "psk", "8021x"]

    /// The file's name and content for `configuration`; throws for what iwd cannot take (WEP,
    /// SSID prefixes, EAP-TLS or FAST) saying so. Hotspot 2.0 is ``hotspotFile(for:now:)``.
    public static func file(for configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) -> (name: String, content: String) {
        if configuration.ssidPrefix != nil, configuration.ssid.isEmpty {
            throw .systemConfiguration("iwd cannot join networks by SSID prefix; resolve the prefix to a network in range first (WiFiNetworkService.resolvingSSIDPrefix).")
        }
        var settings: [(String, String)] = [("AutoConnect", "true")]
        if configuration.hidden { settings.append(("Hidden", "true")) }
        var security: [(String, String)] = []
        let ending: String
        switch configuration.security {
        case .open:
            ending = "open"
        case .wep:
            throw .systemConfiguration("iwd does not join WEP networks.")
        case .personal(let passphrase, _):
            // iwd chooses WPA3 (SAE) by itself where the network offers it; 64 hex digits are the key.
            ending = "psk"
            security.append(passphrase.count == 64 && WPASupplicantNetworkOptions.unhex(passphrase) != nil ? ("PreSharedKey", passphrase.lowercased()) : ("Passphrase", passphrase))
        case .enterprise(let eap):
            ending = "8021x"
            security += try eapSettings(eap)
        case .hotspot20:
            throw .invalid("A Hotspot 2.0 configuration is a file of iwd's hotspot directory (IWDNetworkFile.hotspotFile), not a network file.")
        }
        var mark = [("NameHex", WPASupplicantNetworkOptions.hex(Array(configuration.name.utf8)))]
        if let days = configuration.lifeTimeInDays { mark.append(("Expires", String(Int(now) + days * 86_400))) }
        var content = group("Settings", settings)
        if !security.isEmpty { content += "\n" + group("Security", security) }
        content += "\n" + group(markGroup, mark)
        return (fileName(ssid: configuration.ssid, ending: ending), content)
    }

    /// A Hotspot 2.0 (Passpoint) configuration as a file of iwd's `hotspot` directory, which iwd
    /// reads as 802.1X known networks matched by the hotspot's ANQP answers (iwd's
    /// src/hotspot.c): a `[Hotspot]` group with `Name` (required; the domain), `NAIRealmNames`
    /// (comma-separated; the domain when none is named) and `RoamingConsortium` (one OI, 3 or 5
    /// bytes as hex), the EAP settings of an 802.1X file, and NetExt's mark. The name is the
    /// domain with `.conf`. iwd matches no home domain, PLMN (MCC/MNC) or roaming switch, and one
    /// OI only: those are refused, saying so.
    public static func hotspotFile(for configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) -> (name: String, content: String) {
        guard case .hotspot20(let hs20, let eap) = configuration.security else {
            throw .invalid("Only a Hotspot 2.0 configuration becomes a file of iwd's hotspot directory.")
        }
        try hs20.refuseRoamingSwitchAndPLMNs(holder: "iwd's hotspot files")
        guard hs20.roamingConsortiumOIs.count <= 1 else {
            throw .systemConfiguration("An iwd hotspot file holds one roaming consortium OI, not \(hs20.roamingConsortiumOIs.count); name one.")
        }
        let realms = hs20.naiRealmNames.isEmpty ? [hs20.domainName] : hs20.naiRealmNames
        if let realm = realms.first(where: { $0.contains(",") }) {
            throw .invalidHS20Settings("The NAI realm \"\(realm)\" holds a comma, which separates iwd's realm list.")
        }
        var hotspot = [("Name", hs20.domainName), ("NAIRealmNames", realms.joined(separator: ","))]
        if let oi = hs20.roamingConsortiumOIs.first { hotspot.append(("RoamingConsortium", oi.lowercased())) }
        var mark = [("NameHex", WPASupplicantNetworkOptions.hex(Array(configuration.name.utf8)))]
        if let days = configuration.lifeTimeInDays { mark.append(("Expires", String(Int(now) + days * 86_400))) }
        let content = group("Hotspot", hotspot) + "\n" + group("Settings", [("AutoConnect", "true")]) + "\n"
            + group("Security", try eapSettings(eap)) + "\n" + group(markGroup, mark)
        return (hs20.domainName + ".conf", content)
    }

    /// PEAP or TTLS with a username and password (the first of the configuration's methods iwd
    /// takes; EAP-TLS needs a client certificate, which configurations here do not carry).
    static func eapSettings(_ eap: HotspotEAPSettings) throws(HotspotConfigurationError) -> [(String, String)] {
        guard let method = eap.supportedEAPTypes.first(where: { $0 == .peap || $0 == .ttls }) else {
            throw .systemConfiguration("iwd is given PEAP or TTLS here; \(eap.supportedEAPTypes.map { $0.name.uppercased() }.joined(separator: ", ")) would need a client certificate or is not in iwd.")
        }
        var settings: [(String, String)] = [("EAP-Method", method == .peap ? "PEAP" : "TTLS")]
        settings.append(("EAP-Identity", eap.outerIdentity.isEmpty ? eap.username : eap.outerIdentity))
        let prefix = method == .peap ? "EAP-PEAP" : "EAP-TTLS"
        if method == .peap {
            settings.append(("EAP-PEAP-Phase2-Method", "MSCHAPV2"))
        } else {
            let inner: String
            switch eap.ttlsInnerAuthenticationType {
            case .pap: inner = "Tunneled-PAP"
            case .chap: inner = "Tunneled-CHAP"
            case .mschap: inner = "Tunneled-MSCHAP"
            case .mschapv2: inner = "Tunneled-MSCHAPv2"
            case .eap: inner = "MSCHAPV2"
            }
            settings.append(("EAP-TTLS-Phase2-Method", inner))
        }
        settings += [("\(prefix)-Phase2-Identity", eap.username), ("\(prefix)-Phase2-Password", eap.password)]
        // Masks separated by semicolons: the server's certificate must carry one of the names.
        if !eap.trustedServerNames.isEmpty { settings.append(("\(prefix)-ServerDomainMask", eap.trustedServerNames.joined(separator: ";"))) }
        return settings
    }

    /// The file name iwd gives the network `ssid` with `ending`.
    public static func fileName(ssid: String, ending: String) -> String {
        let bytes = Array(ssid.utf8)
        let verbatim = bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        return (verbatim ? ssid : "=" + WPASupplicantNetworkOptions.hex(bytes)) + "." + ending
    }

    /// NetExt's mark in a file's content: the configuration's name and expiry; nil for a file
    /// NetExt did not write (or whose mark is damaged).
    public static func mark(in content: String) -> (name: String, expires: Double?)? {
        var group: Substring?
        var values: [Substring: Substring] = [:]
        for raw in content.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = raw.drop { $0 == " " || $0 == "\t" }
            if line.hasPrefix("[") {
                group = line.dropFirst().prefix { $0 != "]" }
                continue
            }
            guard group == Substring(markGroup), let equals = line.firstIndex(of: "=") else { continue }
            values[line[..<equals].trimmingSuffix(" ")] = line[line.index(after: equals)...].drop { $0 == " " }
        }
        guard let hex = values["NameHex"], let name = WPASupplicantNetworkOptions.unhex(String(hex)) else { return nil }
        return (String(decoding: name, as: UTF8.self), values["Expires"].flatMap { Double(String($0)) })
    }

    /// The SSID a file name stands for (nil: not a name iwd gives a network file).
    public static func ssid(ofFileName name: String) -> String? {
        guard let dot = name.lastIndex(of: "."), extensions.contains(String(name[name.index(after: dot)...])) else { return nil }
        let stem = name[..<dot]
        guard stem.hasPrefix("=") else { return stem.isEmpty ? nil : String(stem) }
        return WPASupplicantNetworkOptions.unhex(String(stem.dropFirst())).map { String(decoding: $0, as: UTF8.self) }
    }

    static func group(_ name: String, _ entries: [(String, String)]) -> String {
        "[\(name)]\n" + entries.map { "\($0.0)=\(escaped($0.1))\n" }.joined()
    }

    /// A value as the keyfile syntax writes it: backslash, newline, carriage return and tab
    /// escaped, and a leading space as `\s`.
    static func escaped(_ value: String) -> String {
        var out = ""
        for (index, character) in value.enumerated() {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case " " where index == 0: out += "\\s"
            default: out.append(character)
            }
        }
        return out
    }
}

private extension Substring {
    func trimmingSuffix(_ character: Character) -> Substring {
        var result = self
        while result.last == character { result = result.dropLast() }
        return result
    }
}
