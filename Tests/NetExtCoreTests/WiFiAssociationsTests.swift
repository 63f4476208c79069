import NetExtCore
import NetExtTestSupport
import Testing

@Suite("Which network each Wi-Fi interface has joined, and what changed")
struct WiFiAssociationsTests {
    static func network(_ ssid: String, _ bssid: String = "02:00:00:00:00:01", on interface: String = "wlan0", signal: Double = 0.7) -> WiFiScanResult {
        WiFiScanResult(ssid: ssid, bssid: bssid, signalStrength: signal, isSecure: false, interface: interface)
    }

    @Test("a first join, a roam within the network, a move to another network (left first), a leave")
    func oneInterface() {
        var associations = WiFiAssociations()
        #expect(associations.update([:]).isEmpty)
        let cafe = Self.network("Café Libre")
        #expect(associations.update(["wlan0": cafe]) == [.joined(cafe)])
        #expect(associations.update(["wlan0": cafe]).isEmpty, "the same reading again is no change")
        // Another access point of the same network, with another signal: roaming, no change.
        let roamed = Self.network("Café Libre", "02:00:00:00:00:09", signal: 0.3)
        #expect(associations.update(["wlan0": roamed]).isEmpty)
        #expect(associations.joined["wlan0"] == roamed, "the record follows the access point")
        let office = Self.network("Office Wi-Fi", "02:00:00:00:00:02")
        #expect(associations.update(["wlan0": office]) == [.left(interface: "wlan0", ssid: "Café Libre"), .joined(office)])
        #expect(associations.update([:]) == [.left(interface: "wlan0", ssid: "Office Wi-Fi")])
        #expect(associations.joined.isEmpty)
    }

    @Test("several interfaces: changes in the interfaces' name order, each on its own")
    func severalInterfaces() {
        var associations = WiFiAssociations()
        let a = Self.network("A", on: "wlan1"), b = Self.network("B", on: "wlan0"), c = Self.network("C", on: "wlan0")
        #expect(associations.update(["wlan1": a, "wlan0": b]) == [.joined(b), .joined(a)])
        #expect(associations.update(["wlan1": a, "wlan0": c]) == [.left(interface: "wlan0", ssid: "B"), .joined(c)])
        #expect(associations.update(["wlan0": c]) == [.left(interface: "wlan1", ssid: "A")])
        let changes = associations.update([:])
        #expect(changes.map(\.interface) == ["wlan0"])
        #expect(changes.map(\.description) == ["wlan0 left \"C\""])
        #expect(WiFiAssociationChange.joined(a).description == "wlan1 joined \"A\"")
    }

    @Test("replaying random readings: the record is always the last reading, and the changes rebuild it")
    func replay() {
        var random = SplitMix64(state: 0x5EED_A550C)
        let ssids = ["A", "B", "C"], interfaces = ["wlan0", "wlan1"]
        var associations = WiFiAssociations()
        var rebuilt: [String: String] = [:]
        for _ in 0..<2_000 {
            var reading: [String: WiFiScanResult] = [:]
            for interface in interfaces where random.next() % 3 != 0 {
                let ssid = ssids[Int(random.next() % 3)]
                reading[interface] = Self.network(ssid, "02:00:00:00:00:0\(random.next() % 4)", on: interface)
            }
            for change in associations.update(reading) {
                switch change {
                case .joined(let network):
                    #expect(rebuilt[network.interface] == nil, "a join without a leave before it")
                    rebuilt[network.interface] = network.ssid
                case .left(let interface, let ssid):
                    #expect(rebuilt[interface] == ssid, "a leave of a network not joined")
                    rebuilt[interface] = nil
                }
            }
            #expect(associations.joined == reading)
            #expect(rebuilt == reading.mapValues(\.ssid))
        }
    }
}
