import Foundation
import NetExtCore
import NetExtTestSupport
import Synchronization
import Testing

@testable import NetExtLinux

/// The association watches of both Wi-Fi backends against their python3-dbusmock stand-ins on
/// private buses: the signals come over a second real connection, through NetExt's own client.
/// The mocks are driven off the task pool (their D-Bus calls and waits block).
@Suite(
    "Wi-Fi association signals over D-Bus (python3-dbusmock)",
    .enabled(if: PrivateDBus.toolsInstalled, "needs dbus-daemon and python3-dbusmock (scripts/test installs them)"), .serialized)
struct WiFiAssociationWatchTests {
    /// Counts wake-ups, and waits for them.
    final class Tally: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func add() { count.withLock { $0 += 1 } }
        /// Waits up to `seconds` for more than `than` wake-ups; returns how long it took (nil: never).
        func waitFor(moreThan than: Int, seconds: Double) -> Double? {
            let began = Date()
            while Date().timeIntervalSince(began) < seconds {
                if value > than { return Date().timeIntervalSince(began) }
                usleep(10_000)
            }
            return nil
        }
    }

    /// What a watch heard through a join, something that is no association, a leave and its stop.
    struct Heard: Sendable {
        var joinSeconds: Double?
        var noiseWokeIt = false
        var leaveSeconds: Double?
        var watchingAfterStop = true
        var wokenAfterStop = false
        var watchingBeforeStop = false
    }

    /// Runs one watch through a join, something that is no association (`noise`), a leave, its
    /// stop, and a join after it, and says what it heard.
    static func observe(
        _ wifi: any WiFiNetworkService, join: () throws -> Void, noise: () throws -> Void, leave: () throws -> Void, rejoin: () throws -> Void
    ) throws -> Heard {
        var heard = Heard()
        let tally = Tally()
        guard let watch = try wifi.watchAssociations({ tally.add() }) else { return heard }
        defer { watch.stop() }
        // The watch's own AddMatch calls are answered before it returns: nothing is missed.
        try join()
        heard.joinSeconds = tally.waitFor(moreThan: 0, seconds: 5)
        usleep(300_000)
        var before = tally.value
        try noise()
        heard.noiseWokeIt = tally.waitFor(moreThan: before, seconds: 0.7) != nil
        before = tally.value
        try leave()
        heard.leaveSeconds = tally.waitFor(moreThan: before, seconds: 5)
        heard.watchingBeforeStop = watch.isWatching
        watch.stop()
        heard.watchingAfterStop = watch.isWatching
        before = tally.value
        try rejoin()
        heard.wokenAfterStop = tally.waitFor(moreThan: before, seconds: 0.7) != nil
        return heard
    }

    /// What every backend's watch must have heard, `noise` naming what should have woken nothing.
    static func expectHeardJustTheAssociations(_ heard: Heard, noise: String) {
        #expect(heard.joinSeconds.map { $0 < 5 } == true, "the join was not heard")
        #expect(!heard.noiseWokeIt, "\(noise) woke the watch")
        #expect(heard.leaveSeconds.map { $0 < 5 } == true, "the leave was not heard")
        #expect(heard.watchingBeforeStop && !heard.watchingAfterStop)
        #expect(!heard.wokenAfterStop, "a stopped watch still called")
    }

    @Test("NetworkManager: a join and a leave wake the watch at once (the device's StateChanged); a new access point does not; nothing after stop")
    func networkManager() async throws {
        let heard = try await offPool { () throws -> Heard in
            var heard = Heard()
            let tests = NetworkManagerWiFiServiceTests()
            try tests.withMockNetworkManager { connection, device in
                let wifi = try tests.service(connection)
                heard = try Self.observe(
                    wifi, join: { try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false), now: 1_000) },
                    noise: {
                        _ = try tests.mock(connection, "AddAccessPoint", [
                            .string(device), .string("lobby"), .string("Lobby"), .string("aa:bb:cc:00:00:03"), .uint32(2), .uint32(2412),
                            .uint32(54_000), .byte(60), .uint32(0),
                        ])
                    },
                    leave: { _ = try tests.mock(connection, "SetDeviceDisconnected", [.string(device)]) },
                    rejoin: { try wifi.apply(HotspotConfiguration(ssid: "Café Libre"), now: 1_000) })
            }
            return heard
        }
        Self.expectHeardJustTheAssociations(heard, noise: "an access point added to the scan list")
    }

    @Test("wpa_supplicant: a join and a leave wake the watch at once (the interface's State and CurrentBSS); a new BSS does not; nothing after stop")
    func wpaSupplicant() async throws {
        let heard = try await offPool { () throws -> Heard in
            var heard = Heard()
            let tests = WPASupplicantWiFiServiceTests()
            try tests.withMockSupplicant { connection, interface in
                let wifi = try WPASupplicantWiFiService(bus: connection)
                heard = try Self.observe(
                    wifi, join: { try wifi.apply(HotspotConfiguration(ssid: "Office", passphrase: "correct horse battery", isWEP: false), now: 1_000) },
                    noise: {
                        _ = try tests.mock(connection, "AddBSS", [
                            .objectPath(interface), .string("Lobby"), .string("aa:bb:cc:00:00:03"), .int16(-60), .uint16(2412), .string("open"),
                        ])
                    },
                    leave: {
                        _ = try connection.call(.methodCall(
                            destination: WPASupplicantWiFiService.service, path: interface, interface: WPASupplicantWiFiService.interfaceInterface, member: "Disconnect"))
                    },
                    rejoin: { try wifi.apply(HotspotConfiguration(ssid: "Café Libre"), now: 1_000) })
            }
            return heard
        }
        Self.expectHeardJustTheAssociations(heard, noise: "a BSS added to the scan list")
    }

    @Test("a watch whose bus goes away says so (isWatching false), so that the caller starts another")
    func busGone() async throws {
        let ended = try await offPool { () throws -> Bool in
            let bus = try PrivateDBus()
            defer { bus.stop() }
            let watch = try DBusSignalWatch(address: DBusAddress(parsing: bus.address), rules: WiFiAssociationSignals.networkManagerRules) { _ in }
            defer { watch.stop() }
            guard watch.isWatching else { return false }
            bus.stop()
            let began = Date()
            while watch.isWatching, Date().timeIntervalSince(began) < 5 { usleep(20_000) }
            return !watch.isWatching
        }
        #expect(ended)
    }

    @Test("PropertiesChanged matters only when it names an association's property; StateChanged always")
    func whichSignalsMatter() {
        func changed(_ keys: [String]) -> DBusMessage {
            var message = DBusMessage(kind: .signal)
            message.member = "PropertiesChanged"
            message.body = [
                .string("fi.w1.wpa_supplicant1.Interface"),
                .dictionary(key: .string, value: .variant, keys.map { .init(.string($0), .variant(.string("x"))) }), .array(element: .string, []),
            ]
            return message
        }
        let properties: Set<String> = ["State", "CurrentBSS"]
        #expect(WiFiAssociationSignals.matters(changed(["State"]), properties: properties))
        #expect(WiFiAssociationSignals.matters(changed(["BSSs", "CurrentBSS"]), properties: properties))
        #expect(!WiFiAssociationSignals.matters(changed(["BSSs", "ScanInterval"]), properties: properties))
        var truncated = changed(["State"])
        truncated.body = [.string("fi.w1.wpa_supplicant1.Interface")]
        #expect(!WiFiAssociationSignals.matters(truncated, properties: properties), "a body without the changed properties wakes nothing")
        var state = DBusMessage(kind: .signal)
        state.member = "StateChanged"
        #expect(WiFiAssociationSignals.matters(state, properties: properties))
    }
}
