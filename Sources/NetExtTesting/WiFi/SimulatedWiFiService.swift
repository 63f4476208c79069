import NetExtCore
import Synchronization

/// A Wi-Fi service in memory, behind the same `WiFiNetworkService` interface as NetworkManager's:
/// a test puts networks in range (`appear`), moves their signal, takes them away (`disappear`),
/// joins or leaves, and reads what `HotspotConfigurationManager` asked for. It keeps
/// configurations as a real service would (validated, joined when in range, `joinOnce` only
/// in range, lifetimes expiring), and matches SSID prefixes, which NetworkManager cannot.
public final class SimulatedWiFiService: WiFiNetworkService {
    public let name = "simulated Wi-Fi"
    private let state: Mutex<State>

    struct State {
        var interfaces: [String]
        var inRange: [WiFiScanResult] = []
        var joined: [String: String] = [:]
        var configurations: [(configuration: HotspotConfiguration, expires: Double?)] = []
        var observers: [UInt64: @Sendable (String) -> Void] = [:]
        var nextObserver: UInt64 = 0
    }

    /// A service managing `interfaces` (one `wlan0` by default), nothing in range.
    public init(interfaces: [String] = ["wlan0"]) {
        state = Mutex(State(interfaces: interfaces))
    }

    /// Calls `observer` with the interface after each join or leave (what a real service signals).
    public func observe(_ observer: @escaping @Sendable (String) -> Void) {
        _ = addObserver(observer)
    }

    /// Signals each join and leave, as NetworkManager's device state changes do.
    public func watchAssociations(_ changed: @escaping @Sendable () -> Void) throws(HotspotConfigurationError) -> (any WiFiAssociationWatch)? {
        let watch = Watch(service: self)
        watch.id = addObserver { _ in if watch.isWatching { changed() } }
        return watch
    }

    /// How many observers and association watches are registered (a stopped watch is not).
    public var associationWatches: Int { state.withLock { $0.observers.count } }

    private func addObserver(_ observer: @escaping @Sendable (String) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = observer
            return state.nextObserver
        }
    }

    fileprivate func removeObserver(_ id: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }

    /// A watch of the simulated service: an observer until stopped.
    final class Watch: WiFiAssociationWatch, Sendable {
        private let service: SimulatedWiFiService
        private let lock = Mutex<(id: UInt64?, watching: Bool)>((nil, true))
        init(service: SimulatedWiFiService) { self.service = service }
        var id: UInt64? {
            get { lock.withLock { $0.id } }
            set { lock.withLock { $0.id = newValue } }
        }
        var isWatching: Bool { lock.withLock { $0.watching } }
        func stop() {
            let id: UInt64? = lock.withLock { state in
                state.watching = false
                return state.id
            }
            if let id { service.removeObserver(id) }
        }
    }

    /// Puts a network in range (replacing one with the same BSSID).
    public func appear(_ network: WiFiScanResult) {
        state.withLock { state in
            state.inRange.removeAll { $0.bssid == network.bssid }
            state.inRange.append(network)
        }
    }

    /// Takes the network with `bssid` out of range; an interface joined to it leaves.
    public func disappear(bssid: String) {
        let left: [String] = state.withLock { state in
            guard let gone = state.inRange.first(where: { $0.bssid == bssid }) else { return [] }
            state.inRange.removeAll { $0.bssid == bssid }
            guard state.joined[gone.interface] == gone.ssid, !state.inRange.contains(where: { $0.ssid == gone.ssid && $0.interface == gone.interface }) else { return [] }
            state.joined[gone.interface] = nil
            return [gone.interface]
        }
        left.forEach(notify)
    }

    /// Sets the signal of the network with `bssid` (0…1).
    public func setSignal(bssid: String, to strength: Double) {
        state.withLock { state in
            guard let index = state.inRange.firstIndex(where: { $0.bssid == bssid }) else { return }
            state.inRange[index].signalStrength = min(max(strength, 0), 1)
        }
    }

    /// Joins `interface` to the network named `ssid` as a person would (no configuration needed),
    /// or leaves with nil.
    public func join(interface: String, ssid: String?) {
        state.withLock { $0.joined[interface] = ssid }
        notify(interface)
    }

    public func wifiInterfaces() throws(HotspotConfigurationError) -> [String] { state.withLock { $0.interfaces } }

    public func scanList(interface: String?) throws(HotspotConfigurationError) -> [WiFiScanResult] {
        state.withLock { state in
            state.inRange.filter { interface == nil || $0.interface == interface }.sorted { $0.signalStrength > $1.signalStrength }
        }
    }

    public func joinedNetwork(interface: String) throws(HotspotConfigurationError) -> WiFiScanResult? {
        state.withLock { state in
            guard let ssid = state.joined[interface] else { return nil }
            return state.inRange.filter { $0.interface == interface && $0.ssid == ssid }.max { $0.signalStrength < $1.signalStrength }
                ?? WiFiScanResult(ssid: ssid, bssid: "", signalStrength: 0, isSecure: false, interface: interface)
        }
    }

    public func apply(_ configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) {
        try configuration.validate()
        let expires = configuration.lifeTimeInDays.map { now + Double($0 * 86_400) }
        let joinedInterface: String? = try state.withLock { (state: inout State) throws(HotspotConfigurationError) -> String? in
            let target = state.inRange.filter { Self.matches(configuration, $0.ssid) }.max { $0.signalStrength < $1.signalStrength }
            if configuration.joinOnce, target == nil {
                throw .systemConfiguration("No network named \"\(configuration.name)\" is in range to join once.")
            }
            state.configurations.removeAll { $0.configuration.name == configuration.name }
            if !configuration.joinOnce { state.configurations.append((configuration, expires)) }
            guard let target else { return nil }
            if state.joined[target.interface] == target.ssid {
                throw .alreadyAssociated("\(target.interface) has already joined \"\(target.ssid)\"; the configuration is kept.")
            }
            state.joined[target.interface] = target.ssid
            return target.interface
        }
        if let joinedInterface { notify(joinedInterface) }
    }

    public func removeConfiguration(named name: String) throws(HotspotConfigurationError) {
        state.withLock { $0.configurations.removeAll { $0.configuration.name == name } }
    }

    public func configuredNames(now: Double) throws(HotspotConfigurationError) -> [String] {
        state.withLock { state in
            state.configurations.removeAll { ($0.expires ?? .infinity) <= now }
            return state.configurations.map(\.configuration.name)
        }
    }

    /// The configurations kept now, as applied (a test reads what was asked).
    public var configurations: [HotspotConfiguration] { state.withLock { $0.configurations.map(\.configuration) } }

    static func matches(_ configuration: HotspotConfiguration, _ ssid: String) -> Bool {
        configuration.matches(ssid: ssid)
    }

    private func notify(_ interface: String) {
        for observer in state.withLock({ $0.observers.sorted { $0.key < $1.key }.map(\.value) }) { observer(interface) }
    }
}
