import Foundation
import NetExt
import NetExtCore
import NetExtDaemon
import NetExtTesting
import Testing

/// `HotspotConfigurationManager` and on-demand's SSID rules against the simulated Wi-Fi service
/// (the NetworkManager backend runs the same calls against python3-dbusmock in NetExtLinuxTests).
@Suite("Hotspot configurations and SSID rules on the simulated Wi-Fi service")
struct HotspotConfigurationManagerTests {
    static let cafe = WiFiScanResult(ssid: "Café Libre", bssid: "aa:bb:cc:00:00:01", signalStrength: 0.8, isSecure: false, interface: "wlan0")
    static let office = WiFiScanResult(ssid: "Office", bssid: "aa:bb:cc:00:00:02", signalStrength: 0.4, isSecure: true, interface: "wlan0")

    final class Clock: @unchecked Sendable {
        var now = 1_000.0
    }

    @Test("apply joins a network in range, keeps it, and says alreadyAssociated the second time")
    func applyAndList() async throws {
        let wifi = SimulatedWiFiService()
        wifi.appear(Self.cafe)
        wifi.appear(Self.office)
        let manager = HotspotConfigurationManager(service: wifi)
        try await manager.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false))
        #expect(try wifi.joinedNetwork(interface: "wlan0")?.ssid == "Office")
        #expect(try await manager.getConfiguredSSIDs() == ["Office"])
        await #expect(throws: HotspotConfigurationError.alreadyAssociated("wlan0 has already joined \"Office\"; the configuration is kept.")) {
            try await manager.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false))
        }
        try await manager.removeConfiguration(forSSID: "Office")
        #expect(try await manager.getConfiguredSSIDs().isEmpty)
    }

    @Test("a configuration out of range is kept for later; join-once needs the network in range and keeps nothing")
    func outOfRangeAndJoinOnce() async throws {
        let wifi = SimulatedWiFiService()
        let manager = HotspotConfigurationManager(service: wifi)
        try await manager.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false))
        #expect(try wifi.joinedNetwork(interface: "wlan0") == nil)
        #expect(try await manager.getConfiguredSSIDs() == ["Office"])
        var once = HotspotConfiguration(ssid: "Café Libre")
        once.joinOnce = true
        await #expect(throws: HotspotConfigurationError.systemConfiguration("No network named \"Café Libre\" is in range to join once.")) {
            try await manager.apply(once)
        }
        wifi.appear(Self.cafe)
        try await manager.apply(once)
        #expect(try wifi.joinedNetwork(interface: "wlan0")?.ssid == "Café Libre")
        #expect(try await manager.getConfiguredSSIDs() == ["Office"], "join once keeps nothing")
    }

    @Test("lifeTimeInDays ends a configuration at its day, not before")
    func lifetime() async throws {
        let wifi = SimulatedWiFiService()
        let clock = Clock()
        let manager = HotspotConfigurationManager(service: wifi, now: { clock.now })
        var configuration = HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false)
        configuration.lifeTimeInDays = 2
        try await manager.apply(configuration)
        clock.now += 2 * 86_400 - 1
        #expect(try await manager.getConfiguredSSIDs() == ["Office"])
        clock.now += 1
        #expect(try await manager.getConfiguredSSIDs().isEmpty)
    }

    @Test("an SSID prefix joins the strongest network that starts with it")
    func prefix() async throws {
        let wifi = SimulatedWiFiService()
        wifi.appear(Self.cafe)
        wifi.appear(WiFiScanResult(ssid: "Café Annex", bssid: "aa:bb:cc:00:00:03", signalStrength: 0.9, isSecure: false, interface: "wlan0"))
        try await HotspotConfigurationManager(service: wifi).apply(HotspotConfiguration(ssidPrefix: "Café"))
        #expect(try wifi.joinedNetwork(interface: "wlan0")?.ssid == "Café Annex")
        #expect(wifi.configurations.map(\.name) == ["Café*"])
    }

    @Test("invalid configurations are refused naming what is wrong, and nothing is kept", arguments: [
        (HotspotConfiguration(ssid: ""), "The SSID \"\" must be 1 to 32 bytes, not 0."),
        (HotspotConfiguration(ssid: String(repeating: "é", count: 17)), "The SSID \"\(String(repeating: "é", count: 17))\" must be 1 to 32 bytes, not 34."),
        (HotspotConfiguration(ssid: "Office", passphrase: "seven77", isWEP: false), "A WPA passphrase is 8 to 63 printable ASCII characters or 64 hex digits, not 7 characters."),
        (HotspotConfiguration(ssid: "Office", passphrase: "12345678901", isWEP: true), "A WEP key is 5 or 13 ASCII characters or 10 or 26 hex digits, not 11 characters."),
        (HotspotConfiguration(ssid: "Office", eapSettings: .init(supportedEAPTypes: [])), "The EAP settings name no EAP method (supportedEAPTypes is empty)."),
        (HotspotConfiguration(ssid: "Office", eapSettings: .init(supportedEAPTypes: [.tls], username: "a", password: "b")),
         "EAP-TLS needs a client identity, and NetExt has no identity store yet; use PEAP, TTLS or FAST."),
        (HotspotConfiguration(hs20Settings: .init(domainName: "bad..domain"), eapSettings: .init(supportedEAPTypes: [.ttls], username: "a", password: "b")),
         "The Hotspot 2.0 domain name \"bad..domain\" is not a domain name."),
        (HotspotConfiguration(hs20Settings: .init(domainName: "op.example", mccAndMNCs: ["3104"]), eapSettings: .init(supportedEAPTypes: [.ttls], username: "a", password: "b")),
         "The MCC and MNC \"3104\" is not six digits (a 3-digit MCC, then the MNC)."),
        (HotspotConfiguration(hs20Settings: .init(domainName: "op.example", mccAndMNCs: ["31041x"]), eapSettings: .init(supportedEAPTypes: [.ttls], username: "a", password: "b")),
         "The MCC and MNC \"31041x\" is not six digits (a 3-digit MCC, then the MNC)."),
        (HotspotConfiguration(hs20Settings: .init(domainName: "op.example", naiRealmNames: ["op example"]), eapSettings: .init(supportedEAPTypes: [.ttls], username: "a", password: "b")),
         "The NAI realm \"op example\" is empty or holds spaces or control characters."),
        (HotspotConfiguration(hs20Settings: .init(domainName: "op.example"), eapSettings: .init(supportedEAPTypes: [.ttls], username: "a", password: "b")),
         "A Hotspot 2.0 configuration with roaming enabled names roaming consortium OIs or NAI realms; it names neither."),
    ])
    func invalid(configuration: HotspotConfiguration, message: String) async throws {
        let wifi = SimulatedWiFiService()
        do {
            try await HotspotConfigurationManager(service: wifi).apply(configuration)
            Issue.record("accepted")
        } catch {
            #expect(error.description == message)
        }
        #expect(wifi.configurations.isEmpty)
    }

    @Test("a 64-hex-digit PSK and a 10-hex-digit WEP key are keys, not passphrases, and pass; Hotspot 2.0 OIs, a realm and six-digit MCC/MNC codes pass; no roaming needs neither OIs nor realms")
    func hexKeys() throws {
        try HotspotConfiguration(ssid: "Office", passphrase: String(repeating: "ab", count: 32), isWEP: false).validate()
        try HotspotConfiguration(ssid: "Office", passphrase: "0123456789", isWEP: true).validate()
        let hs20 = HotspotHS20Settings(domainName: "op.example", roamingConsortiumOIs: ["001BC50460", "5a03ba"], naiRealmNames: ["wlan.op.example"], mccAndMNCs: ["310410", "234015"])
        try HotspotConfiguration(hs20Settings: hs20, eapSettings: .init(supportedEAPTypes: [.ttls], username: "a", password: "b")).validate()
        try HotspotConfiguration(hs20Settings: HotspotHS20Settings(domainName: "op.example", roamingEnabled: false), eapSettings: .init(supportedEAPTypes: [.ttls], username: "a", password: "b")).validate()
        #expect(throws: HotspotConfigurationError.self) {
            try HotspotConfiguration(ssid: "Office", passphrase: String(repeating: "zz", count: 32), isWEP: false).validate()
        }
    }

    @Test("on-demand's SSIDMatch sees the joined network through the Wi-Fi service, and none without one")
    func ssidRules() throws {
        let wifi = SimulatedWiFiService()
        wifi.appear(Self.cafe)
        wifi.appear(Self.office)
        let joined = MachineWiFiService { () throws(HotspotConfigurationError) in wifi }
        let rules = [
            OnDemandRule(action: .disconnect, interfaceTypeMatch: .wiFi, ssidMatch: ["Office"]),
            OnDemandRule(action: .connect, interfaceTypeMatch: .any),
        ]
        func decision() -> OnDemandEvaluator.Decision {
            var environment = NetworkEnvironment(primaryInterface: "wlan0", interfaceType: .ethernet)
            environment.readJoinedWiFi(joined)
            return OnDemandEvaluator.decision(rules, in: environment, probe: { _ in false }).0
        }
        #expect(decision() == .connect, "not joined: the trusted-network rule does not match")
        wifi.join(interface: "wlan0", ssid: "Office")
        #expect(decision() == .disconnect, "on the office network the VPN stays off")
        wifi.join(interface: "wlan0", ssid: "Café Libre")
        #expect(decision() == .connect)
        wifi.disappear(bssid: Self.cafe.bssid)
        #expect(joined.joined(interface: "wlan0") == nil, "the café's only access point went away: left")

        let none = MachineWiFiService { () throws(HotspotConfigurationError) in throw .systemConfiguration("No Wi-Fi service runs.") }
        #expect(none.joined(interface: "wlan0") == nil)
        #expect(none.lastFailure == "No Wi-Fi service runs.")
    }

    @Test("the simulated service tells observers about joins and leaves, and moves signals")
    func observers() throws {
        let wifi = SimulatedWiFiService(interfaces: ["wlan0", "wlan1"])
        let seen = Seen()
        wifi.observe { seen.add($0) }
        wifi.appear(Self.office)
        wifi.join(interface: "wlan0", ssid: "Office")
        wifi.setSignal(bssid: Self.office.bssid, to: 0.1)
        #expect(try wifi.scanList(interface: "wlan0").first?.signalStrength == 0.1)
        wifi.disappear(bssid: Self.office.bssid)
        #expect(seen.interfaces == ["wlan0", "wlan0"])
        #expect(try wifi.wifiInterfaces() == ["wlan0", "wlan1"])
    }

    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String] = []
        func add(_ value: String) { lock.withLock { values.append(value) } }
        var interfaces: [String] { lock.withLock { values } }
    }
}
