import Foundation
import NetExtCore
import NetExtTestSupport
import Testing

@testable import NetExtLinux

/// The iwd backend against a python3-dbusmock stand-in for iwd's D-Bus API
/// (scripts/lib/iwd_mock.py: as iwd, it takes passphrases only from network files in its state
/// directory, and refuses `Connect` on a secured network without one with `NoAgent`) on a
/// private bus, with a state directory of the test's own. iwd itself cannot run here (no nl80211).
@Suite(
    "iwd Wi-Fi service over D-Bus (python3-dbusmock)",
    .enabled(if: PrivateDBus.toolsInstalled, "needs dbus-daemon and python3-dbusmock (scripts/test installs them)"), .serialized)
struct IWDWiFiServiceTests {
    static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/lib/iwd_mock.py").path

    /// A bus with the iwd stand-in, a station `wlan6` seeing "Café Libre" (open, -52 dBm) and
    /// "Office" (psk, -76 dBm), its state directory, and our connection.
    func withMockIWD(_ body: (DBusConnection, String, String) throws -> Void) throws {
        let bus = try PrivateDBus()
        defer { bus.stop() }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("netext-iwd-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        try bus.startMock(template: Self.template)
        let connection = try DBusConnection(address: DBusAddress(parsing: bus.address))
        defer { connection.close() }
        let deadline = Date().addingTimeInterval(15)
        while try !connection.nameHasOwner("net.connman.iwd") {
            guard Date() < deadline else { throw PrivateDBus.Unavailable(description: "the iwd stand-in did not start within 15 s") }
            usleep(50_000)
        }
        _ = try mock(connection, "SetStateDirectory", [.string(state)])
        let station = try mock(connection, "AddStation", [.string("wlan6")])
        _ = try mock(connection, "AddNetwork", [.string(station), .string("Café Libre"), .string("open"), .int16(-5200), .string("aa:bb:cc:00:00:01")])
        _ = try mock(connection, "AddNetwork", [.string(station), .string("Office"), .string("psk"), .int16(-7600), .string("aa:bb:cc:00:00:02")])
        try body(connection, station, state)
    }

    func mock(_ connection: DBusConnection, _ member: String, _ body: [DBusValue]) throws -> String {
        let answer = try connection.call(.methodCall(destination: "net.connman.iwd", path: "/", interface: "org.freedesktop.DBus.Mock", member: member, body: body))
        return answer.first?.stringValue ?? ""
    }

    func files(_ state: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: state).sorted()
    }

    @Test("the station and its scan list, strongest first: 100 × dBm to strength, security from the network's type, BSSIDs from its service set")
    func scanList() throws {
        try withMockIWD { connection, _, state in
            let wifi = try IWDWiFiService(bus: connection, stateDirectory: state)
            #expect(try wifi.wifiInterfaces() == ["wlan6"])
            let list = try wifi.scanList(interface: nil)
            #expect(list.map(\.ssid) == ["Café Libre", "Office"])
            #expect(list.map(\.signalStrength) == [0.8, 0.4])
            #expect(list.map(\.isSecure) == [false, true])
            #expect(list.map(\.bssid) == ["aa:bb:cc:00:00:01", "aa:bb:cc:00:00:02"])
            #expect(try wifi.scanList(interface: "wlan9").isEmpty)
            #expect(try wifi.joinedNetwork(interface: "wlan6") == nil)
            #expect(try wifi.joinedNetwork(interface: "eth0") == nil)
        }
    }

    @Test("apply writes a marked .psk file (root only), iwd connects with it, a second apply says alreadyAssociated and replaces the file")
    func applyJoins() throws {
        try withMockIWD { connection, station, state in
            let wifi = try IWDWiFiService(bus: connection, stateDirectory: state)
            // The stand-in is iwd in this: without the file, a secured network cannot be joined.
            let office = "\(station)/4f6666696365_psk"
            #expect {
                _ = try connection.call(.methodCall(destination: "net.connman.iwd", path: office, interface: "net.connman.iwd.Network", member: "Connect"))
            } throws: { error in "\(error)".contains("net.connman.iwd.NoAgent") }
            try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false), now: 1_000)
            #expect(try files(state) == ["Office.psk"])
            let content = try String(contentsOfFile: state + "/Office.psk", encoding: .utf8)
            #expect(content == "[Settings]\nAutoConnect=true\n\n[Security]\nPassphrase=correct horse battery\n\n[NetExt]\nNameHex=4f6666696365\n")
            let mode = try FileManager.default.attributesOfItem(atPath: state + "/Office.psk")[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let joined = try wifi.joinedNetwork(interface: "wlan6")
            #expect(joined?.ssid == "Office" && joined?.bssid == "aa:bb:cc:00:00:02" && joined?.signalStrength == 0.4)
            #expect(try wifi.configuredNames(now: 1_000) == ["Office"])
            #expect {
                try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "another passphrase", isWEP: false), now: 1_000)
            } throws: { error in
                guard case .alreadyAssociated? = error as? HotspotConfigurationError else { return false }
                return true
            }
            #expect(try files(state) == ["Office.psk"], "replaced, not doubled")
            #expect(try String(contentsOfFile: state + "/Office.psk", encoding: .utf8).contains("Passphrase=another passphrase"))
        }
    }

    @Test("open, hidden and enterprise networks in iwd's words; a lifetime; what iwd cannot take refused with why")
    func securities() throws {
        try withMockIWD { connection, _, state in
            let wifi = try IWDWiFiService(bus: connection, stateDirectory: state)
            var open = HotspotConfiguration(ssid: "Café Libre")
            open.lifeTimeInDays = 2
            try wifi.apply(open, now: 1_000)
            #expect(try wifi.joinedNetwork(interface: "wlan6")?.ssid == "Café Libre")
            // Not only letters, digits, spaces, _ and -: "=" and the SSID in hex.
            let cafe = "=436166c3a9204c69627265.open"
            #expect(try String(contentsOfFile: state + "/" + cafe, encoding: .utf8)
                == "[Settings]\nAutoConnect=true\n\n[NetExt]\nNameHex=436166c3a9204c69627265\nExpires=173800\n")
            var hidden = HotspotConfiguration(ssid: "Back Office", passphrase: " leading space\\", isWEP: false)
            hidden.hidden = true
            try wifi.apply(hidden, now: 1_000)
            #expect(try String(contentsOfFile: state + "/Back Office.psk", encoding: .utf8).contains("Hidden=true\n\n[Security]\nPassphrase=\\sleading space\\\\\n"))
            let eap = HotspotEAPSettings(
                supportedEAPTypes: [.peap], username: "ana", outerIdentity: "anonymous", password: "s3cret",
                trustedServerNames: ["radius.office.test", "radius2.office.test"])
            try wifi.apply(HotspotConfiguration(ssid: "Office-EAP", eapSettings: eap), now: 1_000)
            #expect(try String(contentsOfFile: state + "/Office-EAP.8021x", encoding: .utf8).contains(
                "[Security]\nEAP-Method=PEAP\nEAP-Identity=anonymous\nEAP-PEAP-Phase2-Method=MSCHAPV2\nEAP-PEAP-Phase2-Identity=ana\nEAP-PEAP-Phase2-Password=s3cret\n"
                    + "EAP-PEAP-ServerDomainMask=radius.office.test;radius2.office.test\n"))
            let refusals: [(HotspotConfiguration, String)] = [
                (HotspotConfiguration(ssid: "Old", passphrase: "abcde", isWEP: true), "does not join WEP"),
                (HotspotConfiguration(ssidPrefix: "Cafe"), "No network whose SSID starts with \"Cafe\""),
                ({ var once = HotspotConfiguration(ssid: "Café Libre"); once.joinOnce = true; return once }(), "joinOnce is not available with iwd"),
                ({ var fast = eap; fast.supportedEAPTypes = [.fast]; return HotspotConfiguration(ssid: "FAST", eapSettings: fast) }(), "PEAP or TTLS"),
            ]
            for (configuration, reason) in refusals {
                #expect { try wifi.apply(configuration, now: 1_000) } throws: { error in "\(error)".contains(reason) }
            }
            #expect(try files(state).count == 3, "nothing written for a refused configuration")
        }
    }

    @Test("Hotspot 2.0: a file of the hotspot directory (made if missing, with the restart said), listed, replaced, expired, removed; another's file left alone; what iwd cannot match refused")
    func hotspotFiles() throws {
        try withMockIWD { connection, _, state in
            let wifi = try IWDWiFiService(bus: connection, stateDirectory: state)
            let eap = HotspotEAPSettings(supportedEAPTypes: [.ttls], username: "ada", password: "s3cret", ttlsInnerAuthenticationType: .pap, trustedServerNames: ["radius.operator.example"])
            var passpoint = HotspotConfiguration(
                hs20Settings: HotspotHS20Settings(domainName: "operator.example", roamingConsortiumOIs: ["001BC50460"]), eapSettings: eap)
            passpoint.lifeTimeInDays = 1
            #expect(performing: { try wifi.apply(passpoint, now: 1_000) }, throws: { "\($0)".contains("restart iwd") })
            let path = state + "/hotspot/operator.example.conf"
            #expect(try String(contentsOfFile: path, encoding: .utf8) == """
                [Hotspot]
                Name=operator.example
                NAIRealmNames=operator.example
                RoamingConsortium=001bc50460

                [Settings]
                AutoConnect=true

                [Security]
                EAP-Method=TTLS
                EAP-Identity=ada
                EAP-TTLS-Phase2-Method=Tunneled-PAP
                EAP-TTLS-Phase2-Identity=ada
                EAP-TTLS-Phase2-Password=s3cret
                EAP-TTLS-ServerDomainMask=radius.operator.example

                [NetExt]
                NameHex=6f70657261746f722e6578616d706c65
                Expires=87400

                """)
            #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
            #expect(try wifi.configuredNames(now: 1_000) == ["operator.example"])
            // Again, with two realms: the directory is there now, so no restart is asked for.
            passpoint.security = .hotspot20(HotspotHS20Settings(domainName: "operator.example", naiRealmNames: ["a.operator.example", "b.operator.example"]), eap)
            try wifi.apply(passpoint, now: 1_000)
            #expect(try String(contentsOfFile: path, encoding: .utf8).contains("NAIRealmNames=a.operator.example,b.operator.example\n"))
            #expect(try files(state + "/hotspot") == ["operator.example.conf"])
            try "[Hotspot]\nName=other\nNAIRealmNames=other.example\n".write(toFile: state + "/hotspot/other.example.conf", atomically: true, encoding: .utf8)
            let foreign = HotspotConfiguration(hs20Settings: HotspotHS20Settings(domainName: "other.example", naiRealmNames: ["other.example"]), eapSettings: eap)
            #expect(performing: { try wifi.apply(foreign, now: 1_000) }, throws: { "\($0)".contains("NetExt did not write") })
            #expect(try wifi.configuredNames(now: 1_000 + 86_400).isEmpty, "the day is up: removed")
            #expect(try files(state + "/hotspot") == ["other.example.conf"], "only NetExt's own file went")
            let refusals: [(HotspotHS20Settings, String)] = [
                (HotspotHS20Settings(domainName: "op.example", roamingEnabled: false), "cannot forbid roaming"),
                (HotspotHS20Settings(domainName: "op.example", naiRealmNames: ["op.example"], mccAndMNCs: ["310410"]), "MCC/MNC"),
                (HotspotHS20Settings(domainName: "op.example", roamingConsortiumOIs: ["001BC50460", "5A03BA"]), "one roaming consortium OI"),
                (HotspotHS20Settings(domainName: "op.example", naiRealmNames: ["a,b"]), "comma"),
            ]
            for (settings, reason) in refusals {
                #expect(performing: { try wifi.apply(HotspotConfiguration(hs20Settings: settings, eapSettings: eap), now: 1_000) }, throws: { "\($0)".contains(reason) })
            }
            try wifi.removeConfiguration(named: "other.example")
            #expect(try files(state + "/hotspot") == ["other.example.conf"])
        }
    }

    @Test("an SSID prefix: the file of the network in range that starts with it, marked with the prefix's name, joined; removed by that name")
    func ssidPrefix() throws {
        try withMockIWD { connection, _, state in
            let wifi = try IWDWiFiService(bus: connection, stateDirectory: state)
            try wifi.apply(HotspotConfiguration(ssidPrefix: "Caf"), now: 0)
            #expect(try files(state) == ["=436166c3a9204c69627265.open"])
            #expect(try String(contentsOfFile: state + "/=436166c3a9204c69627265.open", encoding: .utf8).contains("[NetExt]\nNameHex=4361662a\n"))
            #expect(try wifi.joinedNetwork(interface: "wlan6")?.ssid == "Café Libre")
            #expect(try wifi.configuredNames(now: 0) == ["Caf*"])
            try wifi.removeConfiguration(named: "Caf*")
            #expect(try files(state).isEmpty)
        }
    }

    @Test("files NetExt did not write are never listed or removed; an expired lifetime removes NetExt's; removal by name")
    func ownFilesOnly() throws {
        try withMockIWD { connection, _, state in
            let wifi = try IWDWiFiService(bus: connection, stateDirectory: state)
            try "[Security]\nPassphrase=someone else's\n".write(toFile: state + "/Home.psk", atomically: true, encoding: .utf8)
            var short = HotspotConfiguration(ssid: "Café Libre")
            short.lifeTimeInDays = 1
            try wifi.apply(short, now: 1_000)
            try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false), now: 1_000)
            #expect(try wifi.configuredNames(now: 1_000) == ["Café Libre", "Office"])
            #expect(try wifi.configuredNames(now: 1_000 + 86_400) == ["Office"], "the day is up for the café")
            #expect(try files(state) == ["Home.psk", "Office.psk"])
            try wifi.removeConfiguration(named: "Home")
            try wifi.removeConfiguration(named: "Office")
            #expect(try files(state) == ["Home.psk"], "only NetExt's own file went")
        }
    }

    @Test("a station's State and ConnectedNetwork changes wake the watch; a network added to the scan does not; nothing after stop")
    func watch() throws {
        try withMockIWD { connection, station, state in
            let wifi = try IWDWiFiService(bus: connection, stateDirectory: state)
            let heard = try WiFiAssociationWatchTests.observe(
                wifi, join: { try wifi.apply(HotspotConfiguration(ssid: "Café Libre"), now: 1_000) },
                noise: { _ = try mock(connection, "AddNetwork", [.string(station), .string("Lobby"), .string("open"), .int16(-6000), .string("aa:bb:cc:00:00:03")]) },
                leave: { _ = try connection.call(.methodCall(destination: "net.connman.iwd", path: station, interface: "net.connman.iwd.Station", member: "Disconnect")) },
                rejoin: { try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false), now: 1_000) })
            WiFiAssociationWatchTests.expectHeardJustTheAssociations(heard, noise: "a network added to the scan")
            #expect(try wifi.joinedNetwork(interface: "wlan6")?.ssid == "Office", "joined again after the watch stopped")
        }
    }

    @Test("iwd's file names and NetExt's mark: verbatim or hex, read back; damaged marks and other files are no one's")
    func fileNamesAndMarks() throws {
        #expect(IWDNetworkFile.fileName(ssid: "My Home_2-G", ending: "psk") == "My Home_2-G.psk")
        #expect(IWDNetworkFile.fileName(ssid: "a.b", ending: "open") == "=612e62.open")
        #expect(IWDNetworkFile.ssid(ofFileName: "=612e62.open") == "a.b")
        #expect(IWDNetworkFile.ssid(ofFileName: "My Home_2-G.psk") == "My Home_2-G")
        #expect(IWDNetworkFile.ssid(ofFileName: "x.conf") == nil && IWDNetworkFile.ssid(ofFileName: ".psk") == nil)
        let file = try IWDNetworkFile.file(for: HotspotConfiguration(ssid: "a.b", passphrase: String(repeating: "AB", count: 32), isWEP: false), now: 0)
        #expect(file.name == "=612e62.psk")
        #expect(file.content.contains("PreSharedKey=" + String(repeating: "ab", count: 32)), "64 hex digits are the key itself")
        #expect(IWDNetworkFile.mark(in: file.content)?.name == "a.b")
        #expect(IWDNetworkFile.mark(in: "[Security]\nNameHex=612e62\n") == nil, "a NameHex outside NetExt's group")
        #expect(IWDNetworkFile.mark(in: "[NetExt]\nNameHex=6g\n") == nil)
        #expect(IWDNetworkFile.mark(in: "[NetExt]\n NameHex = 612e62\nExpires=99\n")?.expires == 99, "space before the key, the sign and the value is no part of them")
        #expect(IWDNetworkFile.mark(in: "[NetExt]\nNameHex=612e62 \n") == nil, "a value runs to the end of its line")
        var random = SplitMix64(state: 0x1_0D)
        for _ in 0..<2_000 {
            var bytes = Array(file.content.utf8)
            for _ in 0..<4 { bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next()) }
            _ = IWDNetworkFile.mark(in: String(decoding: bytes, as: UTF8.self))
        }
    }
}
