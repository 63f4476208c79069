import Foundation
import NetExtCore

/// Where netextd keeps its state and socket, from the environment or the command line.
public struct DaemonSettings: Sendable {
    /// `$NETEXT_STATE_DIR`, default `/var/lib/netext`.
    public var stateDirectory: String
    /// `$NETEXT_SOCKET`, default `/run/netext/netextd.sock`.
    public var socketPath: String
    /// `$NETEXT_PROVIDERS_DIR`, default `/etc/netext/providers`.
    public var providersDirectory: String
    /// The group whose members may change configurations (besides root); default `netext`.
    public var adminGroup: String
    /// How long a provider has to start.
    public var providerStartDeadline: Duration
    /// `$NETEXT_RESOLV_CONF`, default `/etc/resolv.conf`: the resolver file tunnels' DNS settings replace.
    public var resolverPath: String = "/etc/resolv.conf"
    /// `$NETEXT_DNS_STUB`, default `127.0.0.153:53`: where netextd's DNS stub listens while a
    /// tunnel with DNS match domains is up (resolver files cannot name another port than 53).
    public var dnsStubAddress: String = "127.0.0.153:53"
    /// Where the machine's DNS is changed (`$NETEXT_DNS_BACKEND`): `file` writes the resolver
    /// file; `resolved` gives systemd-resolved links over D-Bus and leaves the file to it; `auto`
    /// (the default) takes `resolved` when systemd-resolved owns its name on the system bus.
    public var dnsBackend: DNSBackend = .auto
    /// `$NETEXT_DNS_STUB` under systemd-resolved: an address for a link of its own (not
    /// loopback, which resolved ignores), default `169.254.53.53:53`.
    public var resolvedStubAddress: String = "169.254.53.53:53"
    /// How netextd changes the machine's DNS.
    public enum DNSBackend: String, Sendable, CaseIterable {
        case auto, file, resolved
    }

    /// The cgroup (relative to the cgroup v2 root) under which `netext run --app` places apps,
    /// one child per app (`NETEXT_APP_CGROUP`).
    public var appCgroupRoot: String = "netext-apps"
    /// `$NETEXT_APP_SOCKET_MARKS`, default on: apps' sockets are marked at creation by an eBPF
    /// program; `off` leaves the marking to the nftables rules alone (kernels whose eBPF
    /// misbehaves; the per-app benchmark's comparison).
    public var appSocketMarks = true
    /// `$NETEXT_FILTER_RULES_ROOT`, default `/var/lib/netext-filter-rules`: each content filter
    /// data provider reads its rules from `<root>/<bundle identifier>` (world-readable, written
    /// by root and control providers; outside the private state directory).
    public var filterRulesRoot: String = "/var/lib/netext-filter-rules"
    /// `$NETEXT_PREFILTER_INTERVAL` (seconds): replaces every URL filter's
    /// `prefilterFetchInterval`, whose minimum of 2700 s is too long for labs and tests.
    public var prefilterFetchIntervalOverride: Double?
    /// The connectivity check captive portal detection runs when a request names none
    /// (`--connectivity-check-url`, `$NETEXT_CONNECTIVITY_CHECK_URL`); none by default, so netextd
    /// sends nothing anywhere unless told to.
    public var connectivityCheck: ConnectivityProbe?
    /// `$NETEXT_CAPTIVE_PORTAL_CA_FILE`: the CAs a captive portal API server must chain to instead of
    /// the system's (a lab's CA).
    public var captivePortalCAFile: String?
    /// `--captive-portal-detection`, `$NETEXT_CAPTIVE_PORTAL_DETECTION=on`: netextd checks the
    /// default route's interface for a captive portal by itself on network changes (off by
    /// default: it sends a DHCPINFORM, and the check if one is configured, on each change).
    public var captivePortalMonitoring = false
    /// `$NETEXT_CAPTIVE_PORTAL_RECHECK` (seconds, default 30): how often a captive network is
    /// checked again, so that a login is seen.
    public var captivePortalRecheck: Duration = .seconds(30)
    /// `$NETEXT_HOTSPOT_MAINTAIN_INTERVAL` (seconds, default 300): how often the chosen hotspot
    /// helper is asked to `maintain` the session (a portal that times sessions out sooner needs less).
    public var hotspotMaintainInterval: Double = 300
    /// `$NETEXT_PROXY_FLOW_LIMIT` (1…1,048,576, default ``defaultProxyFlowLimit``): the most flows
    /// one app, transparent or DNS proxy provider holds at once; beyond it new flows are refused
    /// (a connection reset, a datagram dropped) until some end.
    public var proxyFlowLimit = DaemonSettings.defaultProxyFlowLimit
    public static let defaultProxyFlowLimit = 16_384

    public init(stateDirectory: String, socketPath: String, providersDirectory: String, adminGroup: String = "netext", providerStartDeadline: Duration = .seconds(30)) {
        self.stateDirectory = stateDirectory
        self.socketPath = socketPath
        self.providersDirectory = providersDirectory
        self.adminGroup = adminGroup
        self.providerStartDeadline = providerStartDeadline
    }

    /// Settings from the environment, with the documented defaults.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> DaemonSettings {
        var settings = DaemonSettings(
            stateDirectory: environment["NETEXT_STATE_DIR"] ?? "/var/lib/netext",
            socketPath: environment["NETEXT_SOCKET"] ?? "/run/netext/netextd.sock",
            providersDirectory: environment["NETEXT_PROVIDERS_DIR"] ?? "/etc/netext/providers")
        if let resolver = environment["NETEXT_RESOLV_CONF"] { settings.resolverPath = resolver }
        if let stub = environment["NETEXT_DNS_STUB"] {
            settings.dnsStubAddress = stub
            settings.resolvedStubAddress = stub
        }
        if let backend = environment["NETEXT_DNS_BACKEND"].flatMap(DNSBackend.init(rawValue:)) { settings.dnsBackend = backend }
        if let root = environment["NETEXT_APP_CGROUP"] {
            let trimmed = root.split(separator: "/").joined(separator: "/")
            if !trimmed.isEmpty && FlowSteering.isWritable(path: trimmed) && !trimmed.split(separator: "/").contains("..") { settings.appCgroupRoot = trimmed }
        }
        if environment["NETEXT_APP_SOCKET_MARKS"] == "off" { settings.appSocketMarks = false }
        if let rules = environment["NETEXT_FILTER_RULES_ROOT"] { settings.filterRulesRoot = rules }
        if let url = environment["NETEXT_CONNECTIVITY_CHECK_URL"], !url.isEmpty {
            settings.connectivityCheck = try? ConnectivityProbe.validated(url: url, expectedResponse: environment["NETEXT_CONNECTIVITY_CHECK_RESPONSE"])
        }
        if let caFile = environment["NETEXT_CAPTIVE_PORTAL_CA_FILE"], !caFile.isEmpty { settings.captivePortalCAFile = caFile }
        if environment["NETEXT_CAPTIVE_PORTAL_DETECTION"] == "on" { settings.captivePortalMonitoring = true }
        if let limit = environment["NETEXT_PROXY_FLOW_LIMIT"].flatMap(Int.init), (1...1_048_576).contains(limit) { settings.proxyFlowLimit = limit }
        if let seconds = environment["NETEXT_CAPTIVE_PORTAL_RECHECK"].flatMap(Int.init), (1...3600).contains(seconds) {
            settings.captivePortalRecheck = .seconds(seconds)
        }
        if let seconds = environment["NETEXT_HOTSPOT_MAINTAIN_INTERVAL"].flatMap(Int.init), (1...86_400).contains(seconds) {
            settings.hotspotMaintainInterval = Double(seconds)
        }
        if let interval = environment["NETEXT_PREFILTER_INTERVAL"].flatMap(Double.init), interval >= 1 { settings.prefilterFetchIntervalOverride = interval }
        return settings
    }

    public var databasePath: String { stateDirectory + "/netext.sqlite" }
    public var secretsDirectory: String { stateDirectory + "/secrets" }
}
