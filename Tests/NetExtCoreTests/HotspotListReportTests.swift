import Foundation
import NetExtCore
import Testing

@Suite("The hotspot list report netext reads from netextd")
struct HotspotListReportTests {
    @Test("a scan from the Wi-Fi service, annotated by two helpers, survives JSON and keeps only the strongest claim")
    func roundTrip() throws {
        let scanned = [
            WiFiScanResult(ssid: "Café Libre", bssid: "02:00:00:00:00:02", signalStrength: 0.5, isSecure: false, frequencyMHz: 2437, interface: "eth0"),
            WiFiScanResult(ssid: "Office Wi-Fi", bssid: "02:00:00:00:00:01", signalStrength: 1.7, isSecure: true, interface: "eth0"),
        ]
        #expect(scanned[1].signalStrength == 1, "a signal past full is full")
        let networks = scanned.map { HotspotNetwork($0) }
        #expect(networks[0].ssid == "Café Libre" && networks[0].bssid == "02:00:00:00:00:02" && networks[0].signalStrength == 0.5)
        var low = networks[0]
        low.setConfidence(.low)
        var high = networks[0]
        high.setConfidence(.high)
        var lowResponse = HotspotHelperCommand(id: 1, kind: .filterScanList, networkList: networks).createResponse(.success)
        lowResponse.setNetworkList([low])
        var highResponse = HotspotHelperCommand(id: 2, kind: .filterScanList, networkList: networks).createResponse(.success)
        highResponse.setNetworkList([high])
        let report = HotspotListReport(
            service: "NetworkManager", scanList: HotspotScanList(scan: networks, answers: [("a.low", lowResponse), ("b.high", highResponse)]),
            joinedBSSIDs: ["02:00:00:00:00:02"], helpersAsked: ["a.low", "b.high", "c.silent"], helpersSilent: ["c.silent"])
        let decoded = try JSONDecoder().decode(HotspotListReport.self, from: JSONEncoder().encode(report))
        #expect(decoded == report)
        #expect(decoded.scanList.entries.map(\.helper) == ["b.high", nil])
        #expect(decoded.scanList.entries[0].network.confidence == .high)
    }
}
