import Foundation
import NetExtCore
import NetExtTestSupport
import Testing

@testable import NetExtLinux

/// The NetworkManager backend against python3-dbusmock's NetworkManager template on a private
/// bus: real D-Bus calls over a real socket, through NetExt's own D-Bus client.
@Suite(
    "NetworkManager Wi-Fi service over D-Bus (python3-dbusmock)",
    .enabled(if: PrivateDBus.toolsInstalled, "needs dbus-daemon and python3-dbusmock (scripts/test installs them)"), .serialized)
struct NetworkManagerWiFiServiceTests {
    static let mockInterface = "org.freedesktop.DBus.Mock"
    static let manager = "/org/freedesktop/NetworkManager"

    /// A bus with the NetworkManager mock, a Wi-Fi device `wlan7` seeing two networks, and our
    /// connection to it.
    func withMockNetworkManager(_ body: (DBusConnection, String) throws -> Void) throws {
        let bus = try PrivateDBus()
        defer { bus.stop() }
        try bus.startMock(template: "networkmanager")
        let connection = try DBusConnection(address: DBusAddress(parsing: bus.address))
        defer { connection.close() }
        let deadline = Date().addingTimeInterval(15)
        while try !connection.nameHasOwner("org.freedesktop.NetworkManager") {
            guard Date() < deadline else { throw PrivateDBus.Unavailable(description: "the NetworkManager mock did not start within 15 s") }
            usleep(50_000)
        }
        let device = try mock(connection, "AddWiFiDevice", [.string("wifi7"), .string("wlan7"), .int32(30)])
        _ = try mock(connection, "AddAccessPoint", [
            .string(device), .string("cafe"), .string("Café Libre"), .string("aa:bb:cc:00:00:01"), .uint32(2), .uint32(2437),
            .uint32(54_000), .byte(80), .uint32(0),
        ])
        _ = try mock(connection, "AddAccessPoint", [
            .string(device), .string("office"), .string("Office"), .string("aa:bb:cc:00:00:02"), .uint32(2), .uint32(5180),
            .uint32(54_000), .byte(40), .uint32(0x100),
        ])
        try body(connection, device)
    }

    func mock(_ connection: DBusConnection, _ member: String, _ body: [DBusValue]) throws -> String {
        let answer = try connection.call(.methodCall(
            destination: "org.freedesktop.NetworkManager", path: Self.manager, interface: Self.mockInterface, member: member, body: body))
        return answer.first?.stringValue ?? ""
    }

    func service(_ connection: DBusConnection) throws -> NetworkManagerWiFiService {
        let counter = Counter()
        return try NetworkManagerWiFiService(bus: connection) { "6d1c7a58-0000-4000-8000-\(String(format: "%012d", counter.next()))" }
    }

    @Test("the Wi-Fi device and its scan list, strongest first, with SSIDs in UTF-8")
    func scanList() throws {
        try withMockNetworkManager { connection, _ in
            let wifi = try service(connection)
            #expect(try wifi.wifiInterfaces() == ["wlan7"])
            let list = try wifi.scanList(interface: nil)
            #expect(list.map(\.ssid) == ["Café Libre", "Office"])
            #expect(list.map(\.signalStrength) == [0.8, 0.4])
            #expect(list.map(\.isSecure) == [false, true])
            #expect(list.map(\.bssid) == ["aa:bb:cc:00:00:01", "aa:bb:cc:00:00:02"])
            #expect(list.map(\.frequencyMHz) == [2437, 5180])
            #expect(try wifi.scanList(interface: "wlan9").isEmpty)
            #expect(try wifi.joinedNetwork(interface: "wlan7") == nil)
            #expect(try wifi.joinedNetwork(interface: "eth0") == nil)
        }
    }

    @Test("apply keeps a WPA2 configuration, joins the network, and a second apply says alreadyAssociated")
    func applyJoins() throws {
        try withMockNetworkManager { connection, _ in
            let wifi = try service(connection)
            try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false), now: 1_000)
            #expect(try wifi.joinedNetwork(interface: "wlan7")?.ssid == "Office")
            #expect(try wifi.configuredNames(now: 1_000) == ["Office"])
            let settings = try ownSettings(connection).first
            let security = settings?.dictionaryValue?["802-11-wireless-security"]?.dictionaryValue
            #expect(security?["key-mgmt"]?.stringValue == "wpa-psk")
            #expect(security?["psk"]?.stringValue == "correct horse battery")
            #expect(settings.flatMap(NetworkManagerSettings.ssid(in:)) == "Office")
            #expect(throws: HotspotConfigurationError.alreadyAssociated("wlan7 has already joined \"Office\"; the configuration is kept.")) {
                try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false), now: 1_000)
            }
            #expect(try ownSettings(connection).count == 1, "the second apply updated the first connection, made no second")
            try wifi.removeConfiguration(named: "Office")
            #expect(try wifi.configuredNames(now: 1_000).isEmpty)
        }
    }

    @Test("an SSID prefix joins the strongest network in range whose SSID starts with it (by bytes), kept and removed by the prefix's name")
    func ssidPrefix() throws {
        try withMockNetworkManager { connection, _ in
            let wifi = try service(connection)
            // "Cafe" is not the start of "Café Libre" in bytes.
            #expect(performing: { try wifi.apply(HotspotConfiguration(ssidPrefix: "Cafe"), now: 0) }, throws: { "\($0)".contains("No network whose SSID starts") })
            try wifi.apply(HotspotConfiguration(ssidPrefix: "Caf"), now: 0)
            #expect(try wifi.joinedNetwork(interface: "wlan7")?.ssid == "Café Libre")
            #expect(try wifi.configuredNames(now: 0) == ["Caf*"])
            #expect(try ownSettings(connection).first.flatMap(NetworkManagerSettings.ssid(in:)) == "Café Libre")
            try wifi.removeConfiguration(named: "Caf*")
            #expect(try ownSettings(connection).isEmpty)
        }
    }

    @Test("connections NetExt did not make are never listed or removed; an expired lifetime removes NetExt's")
    func ownConnectionsOnly() throws {
        try withMockNetworkManager { connection, device in
            let wifi = try service(connection)
            _ = try mock(connection, "AddWiFiConnection", [.string(device), .string("theirs"), .string("Café Libre"), .string("")])
            var configuration = HotspotConfiguration(ssid: "Café Libre")
            configuration.lifeTimeInDays = 1
            try wifi.apply(configuration, now: 1_000)
            #expect(try wifi.configuredNames(now: 1_000 + 86_399) == ["Café Libre"])
            #expect(try listConnections(connection).count == 2)
            #expect(try wifi.configuredNames(now: 1_000 + 86_400).isEmpty)
            #expect(try listConnections(connection) == ["/org/freedesktop/NetworkManager/Settings/theirs"], "only NetExt's expired connection was deleted")
            try wifi.removeConfiguration(named: "Café Libre")
            #expect(try listConnections(connection).count == 1)
        }
    }

    @Test("what NetworkManager cannot do is refused with why: join once out of range, Hotspot 2.0, an SSID prefix nothing in range starts with")
    func refusals() throws {
        try withMockNetworkManager { connection, _ in
            let wifi = try service(connection)
            var once = HotspotConfiguration(ssid: "Elsewhere")
            once.joinOnce = true
            #expect(throws: HotspotConfigurationError.systemConfiguration("No network named \"Elsewhere\" is in range to join once.")) {
                try wifi.apply(once, now: 0)
            }
            let eap = HotspotEAPSettings(supportedEAPTypes: [.peap], username: "ana", password: "pw")
            #expect(performing: { try wifi.apply(HotspotConfiguration(hs20Settings: .init(domainName: "op.example", naiRealmNames: ["op.example"]), eapSettings: eap), now: 0) },
                    throws: { "\($0)".contains("NetworkManager has no Hotspot 2.0 (Passpoint) settings") })
            #expect(performing: { try wifi.apply(HotspotConfiguration(ssidPrefix: "Nowhere"), now: 0) },
                    throws: { "\($0)".contains("No network whose SSID starts with \"Nowhere\" is in range") })
            #expect(throws: HotspotConfigurationError.invalidWPAPassphrase("A WPA passphrase is 8 to 63 printable ASCII characters or 64 hex digits, not 5 characters.")) {
                try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "short", isWEP: false), now: 0)
            }
            #expect(try listConnections(connection).isEmpty, "nothing refused was added")
            var oneShot = HotspotConfiguration(ssid: "Café Libre")
            oneShot.joinOnce = true
            try wifi.apply(oneShot, now: 0)
            #expect(try wifi.joinedNetwork(interface: "wlan7")?.ssid == "Café Libre")
            let settings = try ownSettings(connection).first
            #expect(settings?.dictionaryValue?["connection"]?.dictionaryValue?["autoconnect"]?.boolValue == false)
        }
    }

    @Test("an EAP (PEAP) configuration becomes an 802-1x setting; the password stays out of the error text")
    func enterprise() throws {
        try withMockNetworkManager { connection, _ in
            let wifi = try service(connection)
            let eap = HotspotEAPSettings(
                supportedEAPTypes: [.peap], username: "ana", outerIdentity: "anonymous@corp.test", password: "s3cret-pass", trustedServerNames: ["radius.corp.test"])
            try wifi.apply(HotspotConfiguration(ssid: "Office", eapSettings: eap), now: 0)
            let dot1x = try ownSettings(connection).first?.dictionaryValue?["802-1x"]?.dictionaryValue
            #expect(dot1x?["eap"]?.arrayValue?.compactMap(\.stringValue) == ["peap"])
            #expect(dot1x?["identity"]?.stringValue == "ana")
            #expect(dot1x?["anonymous-identity"]?.stringValue == "anonymous@corp.test")
            #expect(dot1x?["domain-match"]?.stringValue == "radius.corp.test")
            #expect(dot1x?["phase2-auth"]?.stringValue == "mschapv2")
            do {
                try wifi.apply(HotspotConfiguration(hs20Settings: .init(domainName: "op.example", naiRealmNames: ["op.example"]), eapSettings: eap), now: 0)
                Issue.record("NetworkManager took a Hotspot 2.0 configuration")
            } catch {
                #expect(!"\(error)".contains("s3cret"), "the password is not in \(error)")
            }
        }
    }

    @Test("a call to a method NetworkManager lacks fails with the bus's error name, as a sentence")
    func remoteError() throws {
        try withMockNetworkManager { connection, _ in
            do {
                _ = try connection.call(.methodCall(
                    destination: "org.freedesktop.NetworkManager", path: Self.manager, interface: "org.freedesktop.NetworkManager", member: "NoSuchMethod"))
                Issue.record("an unknown method was answered")
            } catch let error as DBusError {
                guard case .remote(let name, _) = error else { Issue.record("not a remote error: \(error)"); return }
                #expect(name.hasPrefix("org.freedesktop.DBus.Error."))
                #expect(error.description.hasPrefix("The D-Bus call failed with org.freedesktop.DBus.Error."))
            }
        }
    }

    func listConnections(_ connection: DBusConnection) throws -> [String] {
        let body = try connection.call(.methodCall(
            destination: "org.freedesktop.NetworkManager", path: "/org/freedesktop/NetworkManager/Settings",
            interface: "org.freedesktop.NetworkManager.Settings", member: "ListConnections"))
        return body.first?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    func ownSettings(_ connection: DBusConnection) throws -> [DBusValue] {
        try listConnections(connection).compactMap { path in
            let body = try connection.call(.methodCall(
                destination: "org.freedesktop.NetworkManager", path: path, interface: "org.freedesktop.NetworkManager.Settings.Connection",
                member: "GetSettings"))
            return body.first.flatMap { NetworkManagerSettings.mark(in: $0) == nil ? nil : $0 }
        }
    }
}

/// Numbers for made-up UUIDs.
final class Counter: @unchecked Sendable {
    private var value = 0
    private let lock = NSLock()
    func next() -> Int { lock.withLock { value += 1; return value } }
}
