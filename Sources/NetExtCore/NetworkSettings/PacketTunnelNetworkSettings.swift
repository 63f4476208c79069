/// What a packet tunnel provider asks netextd to configure, as Apple's
/// `NEPacketTunnelNetworkSettings`: the tunnel's addresses, routes, DNS, MTU and proxies.
public struct PacketTunnelNetworkSettings: Sendable, Hashable, Codable {
    /// The address of the tunnel server (shown in status; its route never goes into the tunnel).
    public var tunnelRemoteAddress: String
    public var ipv4Settings: IPv4Settings?
    public var ipv6Settings: IPv6Settings?
    public var dnsSettings: DNSSettings?
    public var proxySettings: ProxySettings?
    /// The tunnel interface's MTU; if nil, derived from the underlying interface's MTU minus
    /// `tunnelOverheadBytes`.
    public var mtu: Int?
    public var tunnelOverheadBytes: Int?

    public init(tunnelRemoteAddress: String, ipv4Settings: IPv4Settings? = nil, ipv6Settings: IPv6Settings? = nil, dnsSettings: DNSSettings? = nil, proxySettings: ProxySettings? = nil, mtu: Int? = nil, tunnelOverheadBytes: Int? = nil) {
        self.tunnelRemoteAddress = tunnelRemoteAddress
        self.ipv4Settings = ipv4Settings
        self.ipv6Settings = ipv6Settings
        self.dnsSettings = dnsSettings
        self.proxySettings = proxySettings
        self.mtu = mtu
        self.tunnelOverheadBytes = tunnelOverheadBytes
    }
}

/// IPv4 settings of a tunnel (`NEIPv4Settings`): interface addresses with subnet masks, and the
/// routes that go into (included) or stay out of (excluded) the tunnel.
public struct IPv4Settings: Sendable, Hashable, Codable {
    public var addresses: [String]
    public var subnetMasks: [String]
    public var includedRoutes: [IPv4Route]
    public var excludedRoutes: [IPv4Route]

    public init(addresses: [String], subnetMasks: [String], includedRoutes: [IPv4Route] = [], excludedRoutes: [IPv4Route] = []) {
        self.addresses = addresses
        self.subnetMasks = subnetMasks
        self.includedRoutes = includedRoutes
        self.excludedRoutes = excludedRoutes
    }
}

/// An IPv4 route (`NEIPv4Route`).
public struct IPv4Route: Sendable, Hashable, Codable {
    public var destinationAddress: String
    public var subnetMask: String
    public init(destinationAddress: String, subnetMask: String) {
        self.destinationAddress = destinationAddress
        self.subnetMask = subnetMask
    }
    /// All IPv4 destinations (`NEIPv4Route.default()`).
    public static func `default`() -> IPv4Route { IPv4Route(destinationAddress: "0.0.0.0", subnetMask: "0.0.0.0") }
}

/// IPv6 settings of a tunnel (`NEIPv6Settings`).
public struct IPv6Settings: Sendable, Hashable, Codable {
    public var addresses: [String]
    public var networkPrefixLengths: [Int]
    public var includedRoutes: [IPv6Route]
    public var excludedRoutes: [IPv6Route]

    public init(addresses: [String], networkPrefixLengths: [Int], includedRoutes: [IPv6Route] = [], excludedRoutes: [IPv6Route] = []) {
        self.addresses = addresses
        self.networkPrefixLengths = networkPrefixLengths
        self.includedRoutes = includedRoutes
        self.excludedRoutes = excludedRoutes
    }
}

/// An IPv6 route (`NEIPv6Route`).
public struct IPv6Route: Sendable, Hashable, Codable {
    public var destinationAddress: String
    public var networkPrefixLength: Int
    public init(destinationAddress: String, networkPrefixLength: Int) {
        self.destinationAddress = destinationAddress
        self.networkPrefixLength = networkPrefixLength
    }
    /// All IPv6 destinations (`NEIPv6Route.default()`).
    public static func `default`() -> IPv6Route { IPv6Route(destinationAddress: "::", networkPrefixLength: 0) }
}

/// DNS settings of a tunnel (`NEDNSSettings`). With `matchDomains` empty, all queries go to
/// `servers`; otherwise only queries for those domains do.
public struct DNSSettings: Sendable, Hashable, Codable {
    public var servers: [String]
    public var searchDomains: [String]
    public var matchDomains: [String]
    public init(servers: [String], searchDomains: [String] = [], matchDomains: [String] = []) {
        self.servers = servers
        self.searchDomains = searchDomains
        self.matchDomains = matchDomains
    }
}

/// HTTP/HTTPS proxy settings of a tunnel (`NEProxySettings`): stored, shown in status, and exported
/// as `http_proxy`/`https_proxy`/`no_proxy` for programs that honour them.
public struct ProxySettings: Sendable, Hashable, Codable {
    public var httpServer: String?
    public var httpsServer: String?
    public var exceptionList: [String]
    public init(httpServer: String? = nil, httpsServer: String? = nil, exceptionList: [String] = []) {
        self.httpServer = httpServer
        self.httpsServer = httpsServer
        self.exceptionList = exceptionList
    }
}
