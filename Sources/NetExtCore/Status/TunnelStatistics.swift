import Foundation

/// What a tunnel provider knows of its own connection and netextd cannot see from outside: the
/// server it talks to and when it last completed a handshake. A provider reports it with
/// `ProviderContext.reportTunnelStatistics(_:)` whenever it changes; `netext status` shows it
/// next to what netextd knows itself (interface, addresses, routes, DNS, transfer, uptime).
///
/// NetExt's own addition: Apple's `NEPacketTunnelProvider` has no such report, so a provider
/// that never sends one simply shows none of these lines.
public struct TunnelStatistics: Sendable, Hashable, Codable {
    /// The server's address as the provider reaches it (`HOST:PORT`), after roaming too.
    public var endpoint: String?
    /// When the latest handshake completed.
    public var lastHandshake: Date?
    /// Handshakes completed since the tunnel started (the first one and every rekey).
    public var handshakes: Int

    public init(endpoint: String? = nil, lastHandshake: Date? = nil, handshakes: Int = 0) {
        self.endpoint = endpoint
        self.lastHandshake = lastHandshake
        self.handshakes = handshakes
    }

    /// Rekeys: every handshake after the first.
    public var rekeys: Int { max(0, handshakes - 1) }
}

/// A connected tunnel in detail, as `netext status` shows it (in the manner of `wg show`): the
/// interface and what was applied to it, from netextd; the endpoint and handshakes, from the
/// provider's `TunnelStatistics`.
public struct TunnelDetails: Sendable, Hashable, Codable {
    /// The TUN interface (`netext0`).
    public var interface: String
    public var mtu: Int
    /// Interface addresses with their prefix lengths (`10.99.0.2/24`).
    public var addresses: [String]
    /// Destinations routed into the tunnel.
    public var routes: [String]
    /// DNS servers the tunnel set (empty: the system's resolvers stay).
    public var dnsServers: [String]
    /// Names resolved through the tunnel's DNS servers only (empty with DNS servers: every name).
    public var matchDomains: [String]
    public var searchDomains: [String]
    /// Where the tunnel's packets go: the provider's report, else the settings'
    /// `tunnelRemoteAddress`.
    public var endpoint: String?
    public var lastHandshake: Date?
    public var rekeys: Int?

    public init(
        interface: String, mtu: Int, addresses: [String], routes: [String], dnsServers: [String] = [], matchDomains: [String] = [],
        searchDomains: [String] = [], endpoint: String? = nil, lastHandshake: Date? = nil, rekeys: Int? = nil
    ) {
        self.interface = interface
        self.mtu = mtu
        self.addresses = addresses
        self.routes = routes
        self.dnsServers = dnsServers
        self.matchDomains = matchDomains
        self.searchDomains = searchDomains
        self.endpoint = endpoint
        self.lastHandshake = lastHandshake
        self.rekeys = rekeys
    }
}
