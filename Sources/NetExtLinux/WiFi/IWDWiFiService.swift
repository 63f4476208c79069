import Foundation
import NetExtCore

/// The Wi-Fi service iwd runs, over its D-Bus API (`net.connman.iwd`: iwd's doc/station-api.txt,
/// network-api.txt, basic-service-set.txt) where neither NetworkManager nor wpa_supplicant
/// does. Scan lists come from each station's `GetOrderedNetworks`, the joined network from its
/// `State` and `ConnectedNetwork`. iwd has no D-Bus call that takes a passphrase (its agent asks
/// a person), so configurations are the network files iwd reads from its state directory
/// (`IWDNetworkFile`, iwd.network(5); iwd watches the directory), marked as NetExt's, and a
/// network in range is then joined with `Network.Connect`. Writing there needs root.
public final class IWDWiFiService: WiFiNetworkService {
    public let name = "iwd"
    let bus: DBusConnection
    /// iwd's state directory (`/var/lib/iwd`, or `NETEXT_IWD_STATE_DIRECTORY`).
    public let stateDirectory: String

    static let service = "net.connman.iwd"
    static let deviceInterface = "net.connman.iwd.Device"
    static let stationInterface = "net.connman.iwd.Station"
    static let networkInterface = "net.connman.iwd.Network"
    static let bssInterface = "net.connman.iwd.BasicServiceSet"
    /// How long `Network.Connect` may take (iwd answers once connected, DHCP included).
    static let connectTimeout = 30.0

    /// Uses `bus`; throws if iwd does not own its name there.
    public init(bus: DBusConnection, stateDirectory: String? = nil) throws(HotspotConfigurationError) {
        self.bus = bus
        self.stateDirectory = stateDirectory ?? ProcessInfo.processInfo.environment["NETEXT_IWD_STATE_DIRECTORY"] ?? "/var/lib/iwd"
        let running: Bool
        do { running = try bus.nameHasOwner(Self.service) } catch { throw Self.failure(error) }
        guard running else { throw .systemConfiguration("iwd is not running on the D-Bus system bus (\(bus.address)).") }
    }

    /// A station (a Wi-Fi interface iwd runs in station mode) and the objects iwd has.
    struct Station {
        var path: String
        var interface: String
        var properties: [String: DBusValue]
    }

    /// Every object iwd has, by path and interface (`ObjectManager.GetManagedObjects`).
    func objects() throws(HotspotConfigurationError) -> [String: [String: [String: DBusValue]]] {
        try guarded { () throws(DBusError) -> [String: [String: [String: DBusValue]]] in
            let body = try bus.call(.methodCall(destination: Self.service, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects"))
            guard let map = body.first?.dictionaryValue else { throw .unexpectedReply(member: "GetManagedObjects", expected: "a{oa{sa{sv}}}", found: "") }
            return map.mapValues { interfaces in
                (interfaces.dictionaryValue ?? [:]).mapValues { ($0.dictionaryValue ?? [:]).mapValues(\.unwrapped) }
            }
        }
    }

    func stations(_ objects: [String: [String: [String: DBusValue]]]) -> [Station] {
        objects.compactMap { path, interfaces in
            guard let station = interfaces[Self.stationInterface], let name = interfaces[Self.deviceInterface]?["Name"]?.stringValue else { return nil }
            return Station(path: path, interface: name, properties: station)
        }.sorted { $0.interface < $1.interface }
    }

    public func wifiInterfaces() throws(HotspotConfigurationError) -> [String] {
        stations(try objects()).map(\.interface)
    }

    public func scanList(interface: String?) throws(HotspotConfigurationError) -> [WiFiScanResult] {
        let all = try objects()
        var results: [WiFiScanResult] = []
        for station in stations(all) where interface == nil || station.interface == interface {
            for (path, strength) in try orderedNetworks(station) {
                guard let network = all[path]?[Self.networkInterface], let ssid = network["Name"]?.stringValue else { continue }
                results.append(WiFiScanResult(
                    ssid: ssid, bssid: firstBSSID(of: network, in: all), signalStrength: Self.strength(centiDBm: strength),
                    isSecure: network["Type"]?.stringValue != "open", interface: station.interface))
            }
        }
        return results.sorted { $0.signalStrength > $1.signalStrength }
    }

    public func joinedNetwork(interface: String) throws(HotspotConfigurationError) -> WiFiScanResult? {
        let all = try objects()
        guard let station = stations(all).first(where: { $0.interface == interface }),
            ["connected", "roaming"].contains(station.properties["State"]?.stringValue ?? ""),
            let path = station.properties["ConnectedNetwork"]?.stringValue, let network = all[path]?[Self.networkInterface],
            let ssid = network["Name"]?.stringValue
        else { return nil }
        let bssid = station.properties["ConnectedAccessPoint"]?.stringValue.flatMap { all[$0]?[Self.bssInterface]?["Address"]?.stringValue }
        let strength = try orderedNetworks(station).first { $0.path == path }?.strength
        return WiFiScanResult(
            ssid: ssid, bssid: bssid ?? firstBSSID(of: network, in: all), signalStrength: strength.map(Self.strength(centiDBm:)) ?? 0,
            isSecure: network["Type"]?.stringValue != "open", interface: interface)
    }

    public func apply(_ configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) {
        let configuration = try resolvingSSIDPrefix(configuration)
        try configuration.validate()
        if configuration.joinOnce {
            throw .systemConfiguration("iwd keeps every network it is given (its files are its only way to take a passphrase): joinOnce is not available with iwd.")
        }
        if case .hotspot20 = configuration.security { return try applyHotspot(configuration, now: now) }
        let file = try IWDNetworkFile.file(for: configuration, now: now)
        let (target, alreadyJoined) = try joinTarget(for: configuration)
        // Another ending for the same SSID (another security) would be a second network: replaced.
        for own in try ownFiles(now: nil) where own.name == configuration.name || IWDNetworkFile.ssid(ofFileName: own.file) == configuration.ssid {
            try removeFile(own)
        }
        try write(file.content, to: file.name, in: stateDirectory)
        guard let target else { return }  // kept: iwd joins it when it appears
        if alreadyJoined { throw .alreadyAssociated("\(target.interface) has already joined \"\(configuration.ssid)\"; the configuration is kept.") }
        let all = try objects()
        guard let station = stations(all).first(where: { $0.interface == target.interface }),
            let network = try orderedNetworks(station).first(where: { all[$0.path]?[Self.networkInterface]?["Name"]?.stringValue == configuration.ssid })
        else { return }
        do {
            _ = try bus.call(.methodCall(destination: Self.service, path: network.path, interface: Self.networkInterface, member: "Connect"), timeoutSeconds: Self.connectTimeout)
        } catch .timedOut {
            return  // still connecting (iwd answers once DHCP is done): it goes on by itself
        } catch {
            throw Self.failure(error)
        }
    }

    /// A Hotspot 2.0 configuration: a file of the `hotspot` directory (``IWDNetworkFile/hotspotFile(for:now:)``).
    /// iwd joins a matching hotspot by itself; there is no network to `Connect` before its ANQP
    /// answers match. iwd reads that directory only if it was there when iwd started: where
    /// NetExt has to make it, the file is written and the error says iwd must be restarted.
    func applyHotspot(_ configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) {
        let file = try IWDNetworkFile.hotspotFile(for: configuration, now: now)
        let directory = hotspotDirectory
        var made = false
        if access(directory, F_OK) != 0 {
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw .systemConfiguration("iwd's hotspot directory \(directory) cannot be made: \(String(cString: strerror(errno)))")
            }
            made = true
        }
        let own = try ownFiles(now: nil)
        if access(directory + "/" + file.name, F_OK) == 0, !own.contains(where: { $0.directory == directory && $0.file == file.name }) {
            throw .systemConfiguration("iwd's hotspot directory holds \(file.name), which NetExt did not write; it is left as it is.")
        }
        for each in own where each.name == configuration.name { try removeFile(each) }
        try write(file.content, to: file.name, in: directory)
        if made {
            throw .systemConfiguration("\(directory)/\(file.name) is written, but iwd reads its hotspot directory only when it starts, and it had none: restart iwd to use it.")
        }
    }

    /// iwd's directory of Hotspot 2.0 files (`STATE_DIRECTORY/hotspot`).
    var hotspotDirectory: String { stateDirectory + "/hotspot" }

    public func removeConfiguration(named name: String) throws(HotspotConfigurationError) {
        for own in try ownFiles(now: nil) where own.name == name { try removeFile(own) }
    }

    public func configuredNames(now: Double) throws(HotspotConfigurationError) -> [String] {
        var names: [String] = []
        for own in try ownFiles(now: now) where !names.contains(own.name) { names.append(own.name) }
        return names
    }

    /// Hears iwd's stations change `State` or `ConnectedNetwork`.
    public func watchAssociations(_ changed: @escaping @Sendable () -> Void) throws(HotspotConfigurationError) -> (any WiFiAssociationWatch)? {
        try WiFiAssociationSignals.watch(
            bus, rules: WiFiAssociationSignals.iwdRules, properties: ["State", "ConnectedNetwork", "ConnectedAccessPoint"], failure: Self.failure, changed: changed)
    }

    // MARK: The state directory

    struct OwnFile {
        var directory: String
        var file: String
        var name: String
    }

    /// NetExt's files in the state directory and its `hotspot` directory; with `now`, the expired
    /// ones are removed and left out.
    func ownFiles(now: Double?) throws(HotspotConfigurationError) -> [OwnFile] {
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: stateDirectory)
        } catch {
            throw .systemConfiguration("iwd's state directory \(stateDirectory) cannot be read: \(error.localizedDescription)")
        }
        // The hotspot directory may not be there: iwd does not make it.
        let hotspotEntries = (try? FileManager.default.contentsOfDirectory(atPath: hotspotDirectory)) ?? []
        let candidates = entries.sorted().filter { IWDNetworkFile.ssid(ofFileName: $0) != nil }.map { (stateDirectory, $0) }
            + hotspotEntries.sorted().filter { $0.hasSuffix(".conf") }.map { (hotspotDirectory, $0) }
        var own: [OwnFile] = []
        for (directory, entry) in candidates {
            guard let data = FileManager.default.contents(atPath: directory + "/" + entry),
                let mark = IWDNetworkFile.mark(in: String(decoding: data, as: UTF8.self))
            else { continue }
            let file = OwnFile(directory: directory, file: entry, name: mark.name)
            if let now, let expires = mark.expires, expires <= now {
                try removeFile(file)
                continue
            }
            own.append(file)
        }
        return own
    }

    /// Writes `content` as `name` whole or not at all (a temporary file iwd does not read, then a
    /// rename), readable by root only: it holds the passphrase.
    func write(_ content: String, to name: String, in directory: String) throws(HotspotConfigurationError) {
        let temporary = directory + "/.netext-" + UUID().uuidString
        let final = directory + "/" + name
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw .systemConfiguration("iwd's network file \(final) cannot be written (\(reason)); iwd takes configurations from files in its state directory, which needs root.")
        }
        let bytes = Array(content.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced, rename(temporary, final) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .systemConfiguration("iwd's network file \(final) cannot be written: \(reason)")
        }
    }

    func removeFile(_ own: OwnFile) throws(HotspotConfigurationError) {
        guard unlink(own.directory + "/" + own.file) == 0 || errno == ENOENT else {
            throw .systemConfiguration("iwd's network file \(own.directory)/\(own.file) cannot be removed: \(String(cString: strerror(errno)))")
        }
    }

    // MARK: D-Bus

    /// A station's networks in iwd's order, each with its signal in 100 × dBm.
    func orderedNetworks(_ station: Station) throws(HotspotConfigurationError) -> [(path: String, strength: Int)] {
        try guarded { () throws(DBusError) -> [(path: String, strength: Int)] in
            let body = try bus.call(.methodCall(destination: Self.service, path: station.path, interface: Self.stationInterface, member: "GetOrderedNetworks"))
            return (body.first?.arrayValue ?? []).compactMap { entry in
                guard case .structure(let fields) = entry.unwrapped, fields.count == 2, let path = fields[0].stringValue else { return nil }
                switch fields[1].unwrapped {
                case .int16(let value): return (path, Int(value))
                case .int32(let value): return (path, Int(value))
                default: return nil
                }
            }
        }
    }

    /// The first access point's address of a network's extended service set (iwd 2.x lists
    /// them as `ExtendedServiceSet`); "" where iwd does not.
    func firstBSSID(of network: [String: DBusValue], in all: [String: [String: [String: DBusValue]]]) -> String {
        guard let first = network["ExtendedServiceSet"]?.arrayValue?.first?.stringValue else { return "" }
        return all[first]?[Self.bssInterface]?["Address"]?.stringValue ?? ""
    }

    /// iwd's 100 × dBm as NetExt's 0…1 (the mapping the wpa_supplicant backend uses).
    static func strength(centiDBm: Int) -> Double {
        WPASupplicantWiFiService.strength(dBm: .int32(Int32(clamping: centiDBm / 100)))
    }

    func guarded<T>(_ body: () throws(DBusError) -> T) throws(HotspotConfigurationError) -> T {
        do { return try body() } catch { throw Self.failure(error) }
    }

    static func failure(_ error: any Error) -> HotspotConfigurationError {
        .systemConfiguration("iwd: \(error)")
    }
}
