import Foundation

/// What the system DNS settings are doing (`netext dns status`): the configuration in force,
/// how its names travel, and the resolver's counters since its stub started.
public struct DNSSettingsStatus: Sendable, Hashable, Codable {
    public enum State: String, Sendable, Hashable, Codable {
        /// No DNS settings configuration is enabled.
        case off
        /// Names are resolved through the settings' servers.
        case running
        /// Enabled, but netextd could not put it in force (`problem` says why).
        case failed
        /// Enabled, but its on-demand rules keep it out of force on this network (no rule said
        /// Connect, or the last matching rule said Disconnect): the machine resolves as before.
        case paused
    }

    /// The resolver's counters (queries since its stub started).
    public struct Counters: Sendable, Hashable, Codable {
        /// Queries the settings' servers were asked.
        public var bySettings: UInt64
        /// Of those, queries answered from the cache.
        public var cacheHits: UInt64
        /// Of those, queries no encrypted server answered.
        public var encryptedFailures: UInt64
        /// Of those, queries then asked in the clear (the settings allow it).
        public var cleartextFallbacks: UInt64
        /// Queries that went to a tunnel's servers (its match domains).
        public var toTunnel: UInt64
        /// Queries that went to the machine's former servers (names outside the settings' match domains).
        public var toSystem: UInt64
        /// Queries answered SERVFAIL (nobody answered).
        public var unanswered: UInt64
        /// Queries dropped as malformed.
        public var malformed: UInt64

        public init(bySettings: UInt64 = 0, cacheHits: UInt64 = 0, encryptedFailures: UInt64 = 0, cleartextFallbacks: UInt64 = 0, toTunnel: UInt64 = 0, toSystem: UInt64 = 0, unanswered: UInt64 = 0, malformed: UInt64 = 0) {
            self.bySettings = bySettings
            self.cacheHits = cacheHits
            self.encryptedFailures = encryptedFailures
            self.cleartextFallbacks = cleartextFallbacks
            self.toTunnel = toTunnel
            self.toSystem = toSystem
            self.unanswered = unanswered
            self.malformed = malformed
        }
    }

    public var state: State
    public var configurationID: UUID?
    public var name: String?
    public var transport: DNSSettingsProtocol.Transport?
    /// The servers as netextd reaches them (`tls://name@address:853`, `URL at address`, addresses).
    public var servers: [String]
    public var matchDomains: [String]
    /// Where the resolver file points: netextd's stub, or (while a tunnel takes every name) not.
    public var stubInResolverFile: Bool
    /// Whether other programs' DNS is refused (the DNS guard).
    public var prohibitsOtherDNS: Bool
    /// How the machine's names reach netextd: "the resolver file /etc/resolv.conf", or
    /// "systemd-resolved, link netext-dns (D-Bus)"; nil from a netextd that did not say.
    public var machineResolver: String?
    public var problem: String?
    public var counters: Counters

    public init(
        state: State, configurationID: UUID? = nil, name: String? = nil, transport: DNSSettingsProtocol.Transport? = nil, servers: [String] = [],
        matchDomains: [String] = [], stubInResolverFile: Bool = false, prohibitsOtherDNS: Bool = false, machineResolver: String? = nil,
        problem: String? = nil, counters: Counters = Counters()
    ) {
        self.machineResolver = machineResolver
        self.state = state
        self.configurationID = configurationID
        self.name = name
        self.transport = transport
        self.servers = servers
        self.matchDomains = matchDomains
        self.stubInResolverFile = stubInResolverFile
        self.prohibitsOtherDNS = prohibitsOtherDNS
        self.problem = problem
        self.counters = counters
    }
}
