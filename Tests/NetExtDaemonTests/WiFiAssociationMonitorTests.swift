import Foundation
import Logging
import NetExtCore
import NetExtTesting
import Synchronization
import Testing

@testable import NetExtDaemon

/// netextd's association monitor over NetExtTesting's simulated Wi-Fi service: joins and leaves
/// told at once when the service signals them, found by the poll when it does not.
@Suite("Wi-Fi association monitor: joins and leaves, by signal or by poll")
struct WiFiAssociationMonitorTests {
    static let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    static let cafe = WiFiScanResult(ssid: "Café Libre", bssid: "02:00:00:00:00:02", signalStrength: 0.5, isSecure: false, interface: "wlan0")
    static let office = WiFiScanResult(ssid: "Office Wi-Fi", bssid: "02:00:00:00:00:01", signalStrength: 0.7, isSecure: true, interface: "wlan0")

    /// The simulated service as one that signals nothing (callers must poll it).
    struct Silent: WiFiNetworkService {
        let inner: SimulatedWiFiService
        var name: String { "silent Wi-Fi" }
        func wifiInterfaces() throws(HotspotConfigurationError) -> [String] { try inner.wifiInterfaces() }
        func scanList(interface: String?) throws(HotspotConfigurationError) -> [WiFiScanResult] { try inner.scanList(interface: interface) }
        func joinedNetwork(interface: String) throws(HotspotConfigurationError) -> WiFiScanResult? { try inner.joinedNetwork(interface: interface) }
        func apply(_ configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) { try inner.apply(configuration, now: now) }
        func removeConfiguration(named name: String) throws(HotspotConfigurationError) { try inner.removeConfiguration(named: name) }
        func configuredNames(now: Double) throws(HotspotConfigurationError) -> [String] { try inner.configuredNames(now: now) }
    }

    /// What a subscriber was told, as it arrives.
    final class Told: Sendable {
        private let changes = Mutex<[String]>([])
        var all: [String] { changes.withLock { $0 } }
        func follow(_ stream: AsyncStream<WiFiAssociationChange>) -> Task<Void, Never> {
            Task { for await change in stream { changes.withLock { $0.append(change.description) } } }
        }
        /// Waits up to `seconds` for `count` changes; returns how long it took (nil: never).
        func waitFor(_ count: Int, seconds: Double) async -> Double? {
            let began = Date()
            while Date().timeIntervalSince(began) < seconds {
                if all.count >= count { return Date().timeIntervalSince(began) }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }
    }

    static func simulated() -> SimulatedWiFiService {
        let wifi = SimulatedWiFiService(interfaces: ["wlan0"])
        wifi.appear(cafe)
        wifi.appear(office)
        return wifi
    }

    @Test("the network joined at the start, a move to another and a leave are told at once by the service's signal; a stop ends the watch")
    func bySignal() async throws {
        let wifi = Self.simulated()
        wifi.join(interface: "wlan0", ssid: "Café Libre")
        // A poll an hour apart: whatever arrives in this test came by signal.
        let monitor = WiFiAssociationMonitor(wifi: MachineWiFiService(find: { wifi }), logger: Self.quiet, pollInterval: .seconds(3600))
        let told = Told(), second = Told()
        let following = [told.follow(await monitor.subscribe()), second.follow(await monitor.subscribe())]
        await monitor.start()
        #expect(await told.waitFor(1, seconds: 30) != nil)
        #expect(told.all == ["wlan0 joined \"Café Libre\""])
        #expect(await monitor.joined["wlan0"] == Self.cafe)
        #expect(wifi.associationWatches == 1, "one watch of the service")
        wifi.join(interface: "wlan0", ssid: "Office Wi-Fi")
        let moved = await told.waitFor(3, seconds: 30)
        #expect(moved != nil)
        wifi.join(interface: "wlan0", ssid: nil)
        #expect(await told.waitFor(4, seconds: 30) != nil)
        #expect(told.all == ["wlan0 joined \"Café Libre\"", "wlan0 left \"Café Libre\"", "wlan0 joined \"Office Wi-Fi\"", "wlan0 left \"Office Wi-Fi\""])
        #expect(await second.waitFor(4, seconds: 30) != nil)
        #expect(second.all == told.all, "every subscriber is told everything")
        let readings = await monitor.readings
        #expect(readings[.start] == 1 && (readings[.signal] ?? 0) >= 2 && readings[.poll] == nil, "\(readings)")
        await monitor.stop()
        #expect(wifi.associationWatches == 0, "the stop ended the watch")
        for task in following { await task.value }  // the streams finished with the stop
        wifi.join(interface: "wlan0", ssid: "Café Libre")
        try await Task.sleep(for: .milliseconds(200))
        #expect(told.all.count == 4, "nothing after the stop")
    }

    @Test("a service that signals nothing is read every poll interval: a join and a leave are found by the poll")
    func byPoll() async throws {
        let simulated = Self.simulated()
        let silent = Silent(inner: simulated)
        let monitor = WiFiAssociationMonitor(wifi: MachineWiFiService(find: { silent }), logger: Self.quiet, pollInterval: .milliseconds(200))
        let told = Told()
        let following = told.follow(await monitor.subscribe())
        await monitor.start()
        simulated.join(interface: "wlan0", ssid: "Office Wi-Fi")
        #expect(await told.waitFor(1, seconds: 30) != nil)
        simulated.join(interface: "wlan0", ssid: nil)
        #expect(await told.waitFor(2, seconds: 30) != nil)
        #expect(told.all == ["wlan0 joined \"Office Wi-Fi\"", "wlan0 left \"Office Wi-Fi\""])
        let readings = await monitor.readings
        #expect((readings[.poll] ?? 0) >= 1 && readings[.signal] == nil, "\(readings)")
        await monitor.stop()
        await following.value
    }

    @Test("no Wi-Fi service at all: nothing is told, and the monitor stops cleanly")
    func noService() async throws {
        let monitor = WiFiAssociationMonitor(
            wifi: MachineWiFiService(find: { () throws(HotspotConfigurationError) -> any WiFiNetworkService in throw .systemConfiguration("No Wi-Fi service runs.") }),
            logger: Self.quiet, pollInterval: .milliseconds(50))
        let told = Told()
        let following = told.follow(await monitor.subscribe())
        await monitor.start()
        try await Task.sleep(for: .milliseconds(400))
        #expect(told.all.isEmpty)
        #expect(await monitor.joined.isEmpty)
        await monitor.stop()
        await following.value
    }
}
