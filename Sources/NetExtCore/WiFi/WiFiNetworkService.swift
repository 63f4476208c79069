/// The machine's Wi-Fi service as NetExt uses it: scan lists, the joined network, and the
/// configurations `HotspotConfigurationManager` keeps. NetExtLinux's
/// `NetworkManagerWiFiService` talks to NetworkManager over D-Bus; NetExtTesting's
/// `SimulatedWiFiService` plays one in memory. Calls may block (D-Bus): run them off the
/// task pool.
public protocol WiFiNetworkService: Sendable {
    /// The service's name for messages ("NetworkManager").
    var name: String { get }
    /// The Wi-Fi interfaces the service manages.
    func wifiInterfaces() throws(HotspotConfigurationError) -> [String]
    /// What `interface` sees (every Wi-Fi interface when nil), strongest first.
    func scanList(interface: String?) throws(HotspotConfigurationError) -> [WiFiScanResult]
    /// The network `interface` has joined, if any (nil also when it is no Wi-Fi interface).
    func joinedNetwork(interface: String) throws(HotspotConfigurationError) -> WiFiScanResult?
    /// Validates `configuration` (`HotspotConfiguration.validate()`, before anything is kept),
    /// keeps it and joins its network if in range. `now` (seconds since 1970)
    /// starts a `lifeTimeInDays`.
    func apply(_ configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError)
    /// Forgets the configuration named `name` (an SSID, prefix with `*` or Hotspot 2.0 domain)
    /// made through NetExt; others are left alone. Nothing happens if there is none.
    func removeConfiguration(named name: String) throws(HotspotConfigurationError)
    /// The names of the configurations made through NetExt and still in their lifetime at `now`;
    /// expired ones are removed.
    func configuredNames(now: Double) throws(HotspotConfigurationError) -> [String]
    /// Starts telling `changed` (on a thread of the service's) each time one of its interfaces
    /// may have joined, left or moved to another network, as the service signals it; returns
    /// nil when the service signals nothing
    /// (callers then read `joinedNetwork(interface:)` every so often). A wake-up, not a report:
    /// callers read the joined networks again and see what changed. The watch ends with
    /// `WiFiAssociationWatch.stop()`, or by itself when the service goes away.
    func watchAssociations(_ changed: @escaping @Sendable () -> Void) throws(HotspotConfigurationError) -> (any WiFiAssociationWatch)?
}

/// A watch `WiFiNetworkService.watchAssociations(_:)` started.
public protocol WiFiAssociationWatch: Sendable {
    /// Whether it still hears the service (false once stopped, or once the service went away:
    /// start another).
    var isWatching: Bool { get }
    /// Ends the watch: `changed` is not called after this returns.
    func stop()
}

extension WiFiNetworkService {
    /// A service that signals nothing.
    public func watchAssociations(_ changed: @escaping @Sendable () -> Void) throws(HotspotConfigurationError) -> (any WiFiAssociationWatch)? {
        nil
    }

    /// Where `configuration`'s network is in range (nil: nowhere), and whether it is joined there
    /// already; refuses a join-once configuration whose network is not in range.
    public func joinTarget(for configuration: HotspotConfiguration) throws(HotspotConfigurationError) -> (network: WiFiScanResult?, alreadyJoined: Bool) {
        let target = try scanList(interface: nil).first { $0.ssid == configuration.ssid }
        if configuration.joinOnce, target == nil {
            throw .systemConfiguration("No network named \"\(configuration.ssid)\" is in range to join once.")
        }
        guard let target else { return (nil, false) }
        return (target, try joinedNetwork(interface: target.interface)?.ssid == configuration.ssid)
    }

    /// For a service that cannot join by SSID prefix (NetworkManager, wpa_supplicant and iwd all
    /// match whole SSIDs): a prefix configuration becomes one for the strongest network in range
    /// whose SSID starts with the prefix (``HotspotConfiguration/ssidMatching(_:)``), its SSID set
    /// and its prefix kept, so it is still known by its name (`Café*`). Any other configuration
    /// comes back as it is. Throws when no such network is in range: the prefix is matched among
    /// the networks seen when it is applied, not kept for networks that appear later.
    public func resolvingSSIDPrefix(_ configuration: HotspotConfiguration) throws(HotspotConfigurationError) -> HotspotConfiguration {
        guard configuration.ssidPrefix != nil, configuration.ssid.isEmpty else { return configuration }
        try configuration.validate()
        guard let match = configuration.ssidMatching(try scanList(interface: nil)) else {
            throw .systemConfiguration(
                "No network whose SSID starts with \"\(configuration.ssidPrefix ?? "")\" is in range; \(name) matches SSIDs whole, so NetExt joins by prefix among the networks in range when the configuration is applied.")
        }
        var resolved = configuration
        resolved.ssid = match.ssid
        return resolved
    }

    /// What `interface` (nil: every Wi-Fi interface) sees, and the networks joined now there.
    public func scanAndJoined(interface: String?) throws(HotspotConfigurationError) -> (networks: [WiFiScanResult], joined: [WiFiScanResult]) {
        let networks = try scanList(interface: interface)
        let names: [String]
        if let interface { names = [interface] } else { names = try wifiInterfaces() }
        var joined: [WiFiScanResult] = []
        for name in names {
            if let network = try joinedNetwork(interface: name) { joined.append(network) }
        }
        return (networks, joined)
    }
}
