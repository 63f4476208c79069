import Foundation

/// What the server pushes to a client in the handshake response's encrypted payload: the
/// client's tunnel addresses and the routes and DNS settings that go with them. JSON, at most
/// `WireSize.maximumResponsePayload` bytes.
public struct TunnelAssignment: Sendable, Hashable, Codable {
    /// The client's addresses inside the tunnel, CIDR (e.g. `10.99.0.2/32`, `fd99::2/128`).
    public var addresses: [String]
    /// Destinations to send through the tunnel, CIDR (`0.0.0.0/0` for a full tunnel).
    public var includedRoutes: [String]
    /// Destinations that stay outside the tunnel, CIDR.
    public var excludedRoutes: [String]
    public var dnsServers: [String]
    public var searchDomains: [String]
    /// Domains whose queries go to `dnsServers` only (empty: all queries).
    public var matchDomains: [String]
    /// The tunnel MTU the server suggests, if any.
    public var mtu: Int?
    /// HTTP and HTTPS proxies (`HOST:PORT`) for programs using the tunnel, and hosts that bypass them.
    public var httpProxy: String?
    public var httpsProxy: String?
    public var proxyExceptions: [String]?

    public init(addresses: [String], includedRoutes: [String] = [], excludedRoutes: [String] = [], dnsServers: [String] = [], searchDomains: [String] = [], matchDomains: [String] = [], mtu: Int? = nil, httpProxy: String? = nil, httpsProxy: String? = nil, proxyExceptions: [String]? = nil) {
        self.addresses = addresses
        self.includedRoutes = includedRoutes
        self.excludedRoutes = excludedRoutes
        self.dnsServers = dnsServers
        self.searchDomains = searchDomains
        self.matchDomains = matchDomains
        self.mtu = mtu
        self.httpProxy = httpProxy
        self.httpsProxy = httpsProxy
        self.proxyExceptions = proxyExceptions
    }

    func encoded() throws(TunnelProtocolError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { throw .badPayload("cannot encode the assignment") }
        guard data.count <= WireSize.maximumResponsePayload else {
            throw .badPayload("the assignment is \(data.count) bytes; at most \(WireSize.maximumResponsePayload) fit in a handshake response")
        }
        return Array(data)
    }

    static func decode(_ bytes: [UInt8]) throws(TunnelProtocolError) -> TunnelAssignment {
        do {
            return try JSONDecoder().decode(TunnelAssignment.self, from: Data(bytes))
        } catch {
            throw .badPayload("the server's assignment is not valid JSON of the expected shape")
        }
    }
}
