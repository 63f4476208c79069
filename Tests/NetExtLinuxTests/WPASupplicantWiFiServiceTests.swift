import Foundation
import NetExtCore
import NetExtTestSupport
import Testing

@testable import NetExtLinux

/// The wpa_supplicant backend against a python3-dbusmock stand-in for wpa_supplicant's D-Bus API
/// (scripts/lib/wpa_supplicant_mock.py: options kept in wpa_supplicant's configuration form,
/// unknown options refused) on a private bus: real D-Bus calls through NetExt's own client.
@Suite(
    "wpa_supplicant Wi-Fi service over D-Bus (python3-dbusmock)",
    .enabled(if: PrivateDBus.toolsInstalled, "needs dbus-daemon and python3-dbusmock (scripts/test installs them)"), .serialized)
struct WPASupplicantWiFiServiceTests {
    static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/lib/wpa_supplicant_mock.py").path
    static let root = "/fi/w1/wpa_supplicant1"

    /// A bus with the wpa_supplicant mock, an interface `wlan5` seeing two networks, and our
    /// connection to it.
    func withMockSupplicant(_ body: (DBusConnection, String) throws -> Void) throws {
        let bus = try PrivateDBus()
        defer { bus.stop() }
        try bus.startMock(template: Self.template)
        let connection = try DBusConnection(address: DBusAddress(parsing: bus.address))
        defer { connection.close() }
        let deadline = Date().addingTimeInterval(15)
        while try !connection.nameHasOwner("fi.w1.wpa_supplicant1") {
            guard Date() < deadline else { throw PrivateDBus.Unavailable(description: "the wpa_supplicant mock did not start within 15 s") }
            usleep(50_000)
        }
        let interface = try mock(connection, "AddInterface", [.string("wlan5")])
        _ = try mock(connection, "AddBSS", [.objectPath(interface), .string("Café Libre"), .string("aa:bb:cc:00:00:01"), .int16(-52), .uint16(2437), .string("open")])
        _ = try mock(connection, "AddBSS", [.objectPath(interface), .string("Office"), .string("aa:bb:cc:00:00:02"), .int16(-76), .uint16(5180), .string("wpa2")])
        try body(connection, interface)
    }

    func mock(_ connection: DBusConnection, _ member: String, _ body: [DBusValue]) throws -> String {
        let answer = try connection.call(.methodCall(destination: "fi.w1.wpa_supplicant1", path: Self.root, interface: "org.freedesktop.DBus.Mock", member: member, body: body))
        return answer.first?.stringValue ?? ""
    }

    /// The option values of every network on `interface`, in wpa_supplicant's configuration form.
    func networks(_ connection: DBusConnection, _ interface: String) throws -> [[String: String]] {
        try (connection.property("Networks", of: "fi.w1.wpa_supplicant1.Interface", at: interface, on: "fi.w1.wpa_supplicant1").arrayValue ?? []).map { value in
            let properties = try connection.property("Properties", of: "fi.w1.wpa_supplicant1.Network", at: value.stringValue ?? "", on: "fi.w1.wpa_supplicant1")
            return (properties.dictionaryValue ?? [:]).compactMapValues(\.stringValue)
        }
    }

    /// Calls the mock records (method names), for what the service asked.
    func calls(_ connection: DBusConnection, _ path: String) throws -> [String] {
        let body = try connection.call(.methodCall(destination: "fi.w1.wpa_supplicant1", path: path, interface: "org.freedesktop.DBus.Mock", member: "GetCalls"))
        return (body.first?.arrayValue ?? []).compactMap { call in
            guard case .structure(let fields) = call.unwrapped, fields.count > 1 else { return nil }
            return fields[1].stringValue
        }
    }

    @Test("the interface and its scan list, strongest first: dBm to strength, BSSIDs from bytes, security from RSN")
    func scanList() throws {
        try withMockSupplicant { connection, _ in
            let wifi = try WPASupplicantWiFiService(bus: connection)
            #expect(try wifi.wifiInterfaces() == ["wlan5"])
            let list = try wifi.scanList(interface: nil)
            #expect(list.map(\.ssid) == ["Café Libre", "Office"])
            #expect(list.map(\.signalStrength) == [0.8, 0.4])
            #expect(list.map(\.isSecure) == [false, true])
            #expect(list.map(\.bssid) == ["aa:bb:cc:00:00:01", "aa:bb:cc:00:00:02"])
            #expect(list.map(\.frequencyMHz) == [2437, 5180])
            #expect(try wifi.scanList(interface: "wlan9").isEmpty)
            #expect(try wifi.joinedNetwork(interface: "wlan5") == nil)
        }
    }

    @Test("apply adds a marked WPA2 network, saves, selects and joins it; a second apply replaces it and says alreadyAssociated")
    func applyJoins() throws {
        try withMockSupplicant { connection, interface in
            let wifi = try WPASupplicantWiFiService(bus: connection)
            try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false), now: 1_000)
            #expect(try wifi.joinedNetwork(interface: "wlan5")?.ssid == "Office")
            #expect(try wifi.configuredNames(now: 1_000) == ["Office"])
            let network = try networks(connection, interface).first
            #expect(network?["ssid"] == "\"Office\"", "the SSID went as bytes; printable, it is shown quoted")
            #expect(network?["key_mgmt"] == "WPA-PSK")
            #expect(network?["psk"] == nil, "wpa_supplicant never gives the passphrase back")
            #expect(network?["id_str"] == "\"netext::4f6666696365\"")
            #expect(try calls(connection, interface).filter { ["AddNetwork", "SaveConfig", "SelectNetwork"].contains($0) } == ["AddNetwork", "SaveConfig", "SelectNetwork"])
            #expect {
                try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "another passphrase", isWEP: false), now: 1_000)
            } throws: { error in
                guard case .alreadyAssociated? = error as? HotspotConfigurationError else { return false }
                return true
            }
            #expect(try networks(connection, interface).count == 1, "the old block replaced, not doubled")
        }
    }

    @Test("a configuration out of range is kept; joinOnce out of range is refused; open, WPA3, WEP, EAP and hidden networks in wpa_supplicant's words")
    func securities() throws {
        try withMockSupplicant { connection, interface in
            let wifi = try WPASupplicantWiFiService(bus: connection)
            var hidden = HotspotConfiguration(ssid: "Lab", passphrase: "lab passphrase", isWEP: false)
            hidden.security = .personal(passphrase: "lab passphrase", wpa3Only: true)
            hidden.hidden = true
            try wifi.apply(hidden, now: 0)
            #expect(try wifi.joinedNetwork(interface: "wlan5") == nil)
            var once = HotspotConfiguration(ssid: "Elsewhere")
            once.joinOnce = true
            #expect(throws: HotspotConfigurationError.self) { try wifi.apply(once, now: 0) }
            try wifi.apply(HotspotConfiguration(ssid: "Old", passphrase: "0102030405", isWEP: true), now: 0)
            let eap = HotspotEAPSettings(supportedEAPTypes: [.peap], username: "ada", password: "secret", trustedServerNames: ["radius.lab.test"])
            try wifi.apply(HotspotConfiguration(ssid: "Corp", eapSettings: eap), now: 0)
            let blocks = try networks(connection, interface)
            #expect(blocks.count == 3)
            let lab = blocks.first { $0["ssid"] == "\"Lab\"" }
            #expect(lab?["key_mgmt"] == "SAE" && lab?["ieee80211w"] == "2" && lab?["scan_ssid"] == "1")
            let old = blocks.first { $0["ssid"] == "\"Old\"" }
            #expect(old?["key_mgmt"] == "NONE" && old?["wep_key0"] == nil && old?["wep_tx_keyidx"] == "0")
            let corp = blocks.first { $0["ssid"] == "\"Corp\"" }
            #expect(corp?["key_mgmt"] == "WPA-EAP" && corp?["eap"] == "PEAP" && corp?["identity"] == "\"ada\"" && corp?["phase2"] == "\"auth=MSCHAPV2\"")
            #expect(corp?["domain_match"] == "\"radius.lab.test\"")
            #expect(Set(try wifi.configuredNames(now: 0)) == ["Lab", "Old", "Corp"])
            let enabled = try (connection.property("Networks", of: "fi.w1.wpa_supplicant1.Interface", at: interface, on: "fi.w1.wpa_supplicant1").arrayValue ?? []).map {
                try connection.property("Enabled", of: "fi.w1.wpa_supplicant1.Network", at: $0.stringValue ?? "", on: "fi.w1.wpa_supplicant1").boolValue
            }
            #expect(enabled == [true, true, true], "blocks start disabled over D-Bus; NetExt enables them so they are joined in range")
        }
    }

    @Test("networks NetExt did not add are never listed or removed; an expired lifetime removes NetExt's; removal by name")
    func ownNetworksOnly() throws {
        try withMockSupplicant { connection, interface in
            _ = try connection.call(.methodCall(
                destination: "fi.w1.wpa_supplicant1", path: interface, interface: "fi.w1.wpa_supplicant1.Interface", member: "AddNetwork",
                body: [.properties([("ssid", .string("Home")), ("key_mgmt", .string("NONE"))])]))
            let wifi = try WPASupplicantWiFiService(bus: connection)
            var lasting = HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false)
            lasting.lifeTimeInDays = 2
            try wifi.apply(lasting, now: 1_000)
            try wifi.apply(HotspotConfiguration(ssid: "Café Libre"), now: 1_000)
            #expect(Set(try wifi.configuredNames(now: 1_000)) == ["Office", "Café Libre"])
            #expect(try wifi.configuredNames(now: 1_000 + 2 * 86_400) == ["Café Libre"], "Office expired and was removed")
            try wifi.removeConfiguration(named: "Café Libre")
            try wifi.removeConfiguration(named: "Home")
            let left = try networks(connection, interface)
            #expect(left.map { $0["ssid"] } == ["\"Home\""], "only the network NetExt did not add is left")
        }
    }

    @Test("what a network block cannot say is refused with why: SSID prefixes; Hotspot 2.0 (a credential: WPASupplicantCredentialTests)")
    func refusals() throws {
        #expect { try WPASupplicantNetworkOptions.options(for: HotspotConfiguration(ssidPrefix: "Lab-"), now: 0) } throws: { "\($0)".contains("SSID prefix") }
        let passpoint = HotspotConfiguration(hs20Settings: HotspotHS20Settings(domainName: "operator.example"), eapSettings: HotspotEAPSettings(supportedEAPTypes: [.ttls], username: "ada", password: "secret"))
        #expect { try WPASupplicantNetworkOptions.options(for: passpoint, now: 0) } throws: { "\($0)".contains("Hotspot 2.0 configuration is a wpa_supplicant credential") }
    }

    @Test("an SSID prefix: a block for the network in range that starts with it, marked with the prefix's name, selected and joined")
    func ssidPrefix() throws {
        try withMockSupplicant { connection, interface in
            let wifi = try WPASupplicantWiFiService(bus: connection)
            try wifi.apply(HotspotConfiguration(ssidPrefix: "Off", security: .personal(passphrase: "correct horse battery", wpa3Only: false)), now: 0)
            #expect(try wifi.joinedNetwork(interface: "wlan5")?.ssid == "Office")
            let network = try networks(connection, interface).first
            #expect(network?["ssid"] == "\"Office\"")
            #expect(network?["id_str"] == "\"netext::4f66662a\"", "marked with the prefix's name, Off*")
            #expect(try wifi.configuredNames(now: 0) == ["Off*"])
        }
    }

    @Test("Hotspot 2.0 without a control interface (CtrlInterface empty) is refused saying how to get one; nothing is added, and listing still works")
    func passpointNeedsControlInterface() throws {
        try withMockSupplicant { connection, interface in
            let wifi = try WPASupplicantWiFiService(bus: connection)
            let passpoint = HotspotConfiguration(
                hs20Settings: HotspotHS20Settings(domainName: "operator.example", naiRealmNames: ["operator.example"]), eapSettings: HotspotEAPSettings(supportedEAPTypes: [.ttls], username: "ada", password: "secret"))
            #expect(performing: { try wifi.apply(passpoint, now: 0) }, throws: { "\($0)".contains("without a control interface (ctrl_interface)") })
            #expect(try calls(connection, interface).filter { ["AddNetwork", "SaveConfig"].contains($0) }.isEmpty)
            #expect(try wifi.configuredNames(now: 0).isEmpty)
        }
    }

    @Test("the mark: read back quoted or bare; other id_str values, odd hex and missing fields are not NetExt's")
    func marks() {
        #expect(WPASupplicantNetworkOptions.mark(in: ["id_str": .string("\"netext:172800:4f6666696365\"")])! == ("Office", 172_800))
        #expect(WPASupplicantNetworkOptions.mark(in: ["id_str": .string("netext::41")])! == ("A", nil))
        for other in ["\"home\"", "netext:", "netext:1:4", "netext:1:zz", "\"netext\""] {
            #expect(WPASupplicantNetworkOptions.mark(in: ["id_str": .string(other)]) == nil, "\(other)")
        }
        #expect(WPASupplicantNetworkOptions.mark(in: [:]) == nil)
    }
}
