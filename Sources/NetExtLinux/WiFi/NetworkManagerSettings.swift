import NetExtCore

/// Translates a `HotspotConfiguration` into NetworkManager's connection settings (the
/// `a{sa{sv}}` of `Settings.AddConnection`, nm-settings-dbus(5)) and reads back the marks NetExt
/// leaves: the `user` setting's data (`org.netext.configuration` = the name,
/// `org.netext.expires` = seconds since 1970), so NetExt never touches connections it did not make.
public enum NetworkManagerSettings {
    static let configurationKey = "org.netext.configuration"
    static let expiresKey = "org.netext.expires"

    /// The settings for `configuration`; `uuid` names the connection. Throws for what
    /// NetworkManager has no settings for (SSID prefixes, Hotspot 2.0).
    public static func settings(for configuration: HotspotConfiguration, uuid: String, now: Double) throws(HotspotConfigurationError) -> DBusValue {
        if configuration.ssidPrefix != nil, configuration.ssid.isEmpty {
            throw .systemConfiguration("NetworkManager cannot join networks by SSID prefix; resolve the prefix to a network in range first (WiFiNetworkService.resolvingSSIDPrefix).")
        }
        var userData: [(String, String)] = [(configurationKey, configuration.name)]
        if let days = configuration.lifeTimeInDays { userData.append((expiresKey, String(Int(now) + days * 86_400))) }
        var wireless: [(String, DBusValue)] = [("ssid", .bytes(Array(configuration.ssid.utf8))), ("mode", .string("infrastructure"))]
        if configuration.hidden { wireless.append(("hidden", .boolean(true))) }
        var sections: [(String, DBusValue)] = [
            ("connection", .properties([
                ("id", .string(configuration.ssid)), ("uuid", .string(uuid)), ("type", .string("802-11-wireless")),
                ("autoconnect", .boolean(!configuration.joinOnce)),
            ])),
            ("ipv4", .properties([("method", .string("auto"))])),
            ("ipv6", .properties([("method", .string("auto"))])),
            ("user", .properties([("data", .dictionary(key: .string, value: .string, userData.map { .init(.string($0.0), .string($0.1)) }))])),
        ]
        switch configuration.security {
        case .open:
            break
        case .wep(let key):
            // wep-key-type 1: the key itself, hex or ASCII (2 would be a passphrase to hash).
            sections.append(("802-11-wireless-security", .properties([
                ("key-mgmt", .string("none")), ("wep-key0", .string(key)), ("wep-key-type", .uint32(1)),
                ("auth-alg", .string("open")),
            ])))
        case .personal(let passphrase, let wpa3Only):
            sections.append(("802-11-wireless-security", .properties([
                ("key-mgmt", .string(wpa3Only ? "sae" : "wpa-psk")), ("psk", .string(passphrase)),
            ])))
        case .enterprise(let eap):
            sections.append(("802-11-wireless-security", .properties([("key-mgmt", .string("wpa-eap"))])))
            sections.append(("802-1x", eapSettings(eap)))
        case .hotspot20:
            throw .systemConfiguration("NetworkManager has no Hotspot 2.0 (Passpoint) settings; configure the SSID as an enterprise network.")
        }
        if case .open = configuration.security {} else { wireless.append(("security", .string("802-11-wireless-security"))) }
        sections.insert(("802-11-wireless", .properties(wireless)), at: 1)
        return .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), sections.map { .init(.string($0.0), $0.1) })
    }

    /// The `802-1x` setting for PEAP, TTLS or FAST with a username and password.
    static func eapSettings(_ eap: HotspotEAPSettings) -> DBusValue {
        var entries: [(String, DBusValue)] = [
            ("eap", .strings(eap.supportedEAPTypes.map(\.name))), ("identity", .string(eap.username)),
            ("password", .string(eap.password)),
            ("phase2-auth", .string(eap.supportedEAPTypes.contains(.ttls) ? eap.ttlsInnerAuthenticationType.rawValue : "mschapv2")),
        ]
        if !eap.outerIdentity.isEmpty { entries.append(("anonymous-identity", .string(eap.outerIdentity))) }
        if !eap.trustedServerNames.isEmpty { entries.append(("domain-match", .string(eap.trustedServerNames.joined(separator: ";")))) }
        return .properties(entries)
    }

    /// NetExt's marks in a connection's settings (`GetSettings`): the configuration's name and
    /// its expiry; nil for a connection NetExt did not make.
    public static func mark(in settings: DBusValue) -> (name: String, expires: Double?)? {
        guard let data = settings.dictionaryValue?["user"]?.dictionaryValue?["data"]?.dictionaryValue,
            let name = data[configurationKey]?.stringValue
        else { return nil }
        return (name, data[expiresKey]?.stringValue.flatMap(Double.init))
    }

    /// The SSID a connection's settings name, if it is a Wi-Fi connection.
    public static func ssid(in settings: DBusValue) -> String? {
        settings.dictionaryValue?["802-11-wireless"]?.dictionaryValue?["ssid"]?.bytesValue.map { String(decoding: $0, as: UTF8.self) }
    }
}
