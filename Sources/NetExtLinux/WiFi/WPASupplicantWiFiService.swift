import NetExtCore

/// The Wi-Fi service wpa_supplicant runs where NetworkManager does not, over its D-Bus API
/// (`fi.w1.wpa_supplicant1`, "wpa_supplicant D-Bus API" in its developer documentation). Scan
/// lists come from each interface's BSSs, the joined network from its current BSS once the
/// state is `completed`; configurations are network blocks NetExt marks as its own
/// (`WPASupplicantNetworkOptions`), added (enabled) to every interface, and written to wpa_supplicant's
/// configuration file (`SaveConfig`) unless joined once — which needs `update_config=1` there;
/// without it they last until wpa_supplicant restarts. Hotspot 2.0 configurations are
/// credentials, kept through its control interface (`WPASupplicantWiFiService+Credentials`).
public final class WPASupplicantWiFiService: WiFiNetworkService {
    public let name = "wpa_supplicant"
    let bus: DBusConnection

    static let service = "fi.w1.wpa_supplicant1"
    static let rootPath = "/fi/w1/wpa_supplicant1"
    static let interfaceInterface = "fi.w1.wpa_supplicant1.Interface"
    static let bssInterface = "fi.w1.wpa_supplicant1.BSS"
    static let networkInterface = "fi.w1.wpa_supplicant1.Network"

    /// Uses `bus`; throws if wpa_supplicant does not own its name there.
    public init(bus: DBusConnection) throws(HotspotConfigurationError) {
        self.bus = bus
        let running: Bool
        do { running = try bus.nameHasOwner(Self.service) } catch { throw Self.failure(error) }
        guard running else { throw .systemConfiguration("wpa_supplicant is not running on the D-Bus system bus (\(bus.address)).") }
    }

    struct Interface {
        var path: String
        var name: String
    }

    func interfaces() throws(HotspotConfigurationError) -> [Interface] {
        try guarded { () throws(DBusError) -> [Interface] in
            var found: [Interface] = []
            for value in try bus.property("Interfaces", of: Self.service, at: Self.rootPath, on: Self.service).arrayValue ?? [] {
                guard let path = value.stringValue,
                    let name = try bus.property("Ifname", of: Self.interfaceInterface, at: path, on: Self.service).stringValue
                else { continue }
                found.append(Interface(path: path, name: name))
            }
            return found
        }
    }

    public func wifiInterfaces() throws(HotspotConfigurationError) -> [String] {
        try interfaces().map(\.name)
    }

    public func scanList(interface: String?) throws(HotspotConfigurationError) -> [WiFiScanResult] {
        var results: [WiFiScanResult] = []
        for each in try interfaces() where interface == nil || each.name == interface {
            try guarded { () throws(DBusError) in
                for value in try bus.property("BSSs", of: Self.interfaceInterface, at: each.path, on: Self.service).arrayValue ?? [] {
                    guard let path = value.stringValue, let result = try bss(path, interface: each.name) else { continue }
                    results.append(result)
                }
            }
        }
        return results.sorted { $0.signalStrength > $1.signalStrength }
    }

    public func joinedNetwork(interface: String) throws(HotspotConfigurationError) -> WiFiScanResult? {
        guard let each = try interfaces().first(where: { $0.name == interface }) else { return nil }
        return try guarded { () throws(DBusError) -> WiFiScanResult? in
            let properties = try bus.properties(of: Self.interfaceInterface, at: each.path, on: Self.service)
            guard properties["State"]?.stringValue == "completed", let current = properties["CurrentBSS"]?.stringValue, current != "/" else { return nil }
            return try bss(current, interface: interface)
        }
    }

    public func apply(_ configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) {
        let configuration = try resolvingSSIDPrefix(configuration)
        try configuration.validate()
        if case .hotspot20 = configuration.security { return try applyCredential(configuration, now: now) }
        let options = try WPASupplicantNetworkOptions.options(for: configuration, now: now)
        let (target, alreadyJoined) = try joinTarget(for: configuration)
        // wpa_supplicant cannot change a network block in one step: the old one goes, a new one comes.
        let replaced = try ownNetworks(now: nil).filter { $0.name == configuration.name }
        var added: [String: String] = [:]
        let all = try interfaces()
        try guarded { () throws(DBusError) in
            for network in replaced { try remove(network) }
            for each in all {
                let body = try bus.call(.methodCall(destination: Self.service, path: each.path, interface: Self.interfaceInterface, member: "AddNetwork", body: [options]))
                guard let path = body.first?.stringValue else { throw .unexpectedReply(member: "AddNetwork", expected: "o", found: "") }
                // Blocks added over D-Bus start disabled; enabled, wpa_supplicant joins them in range.
                try bus.setProperty("Enabled", of: Self.networkInterface, at: path, on: Self.service, to: .boolean(true))
                added[each.name] = path
            }
        }
        if !configuration.joinOnce { try save() }
        guard let target, let network = added[target.interface] else { return }  // kept; wpa_supplicant joins it in range
        if alreadyJoined {
            throw .alreadyAssociated("\(target.interface) has already joined \"\(configuration.ssid)\"; the configuration is kept.")
        }
        guard let each = try interfaces().first(where: { $0.name == target.interface }) else { return }
        try guarded { () throws(DBusError) in
            _ = try bus.call(.methodCall(destination: Self.service, path: each.path, interface: Self.interfaceInterface, member: "SelectNetwork", body: [.objectPath(network)]))
        }
    }

    public func removeConfiguration(named name: String) throws(HotspotConfigurationError) {
        let own = try ownNetworks(now: nil).filter { $0.name == name }
        try guarded { () throws(DBusError) in for network in own { try remove(network) } }
        let hadCredentials = try removeCredentials(named: name)
        if !own.isEmpty || hadCredentials { try save() }
    }

    public func configuredNames(now: Double) throws(HotspotConfigurationError) -> [String] {
        var names: [String] = []
        for network in try ownNetworks(now: now) where !names.contains(network.name) { names.append(network.name) }
        for credential in try ownCredentials(now: now) where !names.contains(credential.name) { names.append(credential.name) }
        return names
    }

    struct OwnNetwork {
        var interfacePath: String
        var path: String
        var name: String
    }

    /// NetExt's network blocks on every interface; with `now`, the expired ones are removed
    /// (and the file saved) and left out.
    func ownNetworks(now: Double?) throws(HotspotConfigurationError) -> [OwnNetwork] {
        var own: [OwnNetwork] = []
        var expired: [OwnNetwork] = []
        for each in try interfaces() {
            try guarded { () throws(DBusError) in
                for value in try bus.property("Networks", of: Self.interfaceInterface, at: each.path, on: Self.service).arrayValue ?? [] {
                    guard let path = value.stringValue else { continue }
                    let properties: [String: DBusValue]
                    do throws(DBusError) {
                        properties = try bus.property("Properties", of: Self.networkInterface, at: path, on: Self.service).dictionaryValue ?? [:]
                    } catch .remote {
                        continue  // removed meanwhile
                    }
                    guard let mark = WPASupplicantNetworkOptions.mark(in: properties.mapValues(\.unwrapped)) else { continue }
                    let network = OwnNetwork(interfacePath: each.path, path: path, name: mark.name)
                    if let now, let expires = mark.expires, expires <= now { expired.append(network) } else { own.append(network) }
                }
            }
        }
        if !expired.isEmpty {
            try guarded { () throws(DBusError) in for network in expired { try remove(network) } }
            try save()
        }
        return own
    }

    private func remove(_ network: OwnNetwork) throws(DBusError) {
        _ = try bus.call(.methodCall(
            destination: Self.service, path: network.interfacePath, interface: Self.interfaceInterface, member: "RemoveNetwork", body: [.objectPath(network.path)]))
    }

    /// Writes the networks to wpa_supplicant's file on each interface; one that refuses (no
    /// `update_config=1`) keeps them until it restarts, which is said.
    func save() throws(HotspotConfigurationError) {
        for each in try interfaces() {
            do {
                _ = try bus.call(.methodCall(destination: Self.service, path: each.path, interface: Self.interfaceInterface, member: "SaveConfig"))
            } catch {
                throw .systemConfiguration("wpa_supplicant kept the network but cannot write its configuration file for \(each.name) (is update_config=1 set?): \(error)")
            }
        }
    }

    private func bss(_ path: String, interface: String) throws(DBusError) -> WiFiScanResult? {
        let properties: [String: DBusValue]
        do {
            properties = try bus.properties(of: Self.bssInterface, at: path, on: Self.service)
        } catch .remote {
            return nil  // the BSS went away between the list and the look
        }
        guard let ssid = properties["SSID"]?.bytesValue else { return nil }
        let bssid = (properties["BSSID"]?.bytesValue ?? []).map { WPASupplicantNetworkOptions.hex([$0]) }.joined(separator: ":")
        let keyManagement = ["RSN", "WPA"].flatMap { properties[$0]?.dictionaryValue?["KeyMgmt"]?.arrayValue ?? [] }
        let secure = properties["Privacy"]?.boolValue == true || !keyManagement.isEmpty
        return WiFiScanResult(
            ssid: String(decoding: ssid, as: UTF8.self), bssid: bssid, signalStrength: Self.strength(dBm: properties["Signal"]),
            isSecure: secure, frequencyMHz: Int(properties["Frequency"]?.uintValue ?? 0), interface: interface)
    }

    /// wpa_supplicant gives the signal in dBm; NetExt's strength is 0…1: -100 dBm and below is 0,
    /// -40 dBm and above is 1, linear between (NetExt's own mapping).
    static func strength(dBm value: DBusValue?) -> Double {
        let dBm: Double
        switch value?.unwrapped {
        case .int16(let level): dBm = Double(level)
        case .int32(let level): dBm = Double(level)
        default: return 0
        }
        return min(1, max(0, (dBm + 100) / 60))
    }

    func guarded<T>(_ body: () throws(DBusError) -> T) throws(HotspotConfigurationError) -> T {
        do { return try body() } catch { throw Self.failure(error) }
    }

    static func failure(_ error: any Error) -> HotspotConfigurationError {
        .systemConfiguration("wpa_supplicant: \(error)")
    }
}
