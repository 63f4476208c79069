import Foundation

/// Network relay settings, as Apple's `NERelayManager`: which connections go through a chain
/// of MASQUE relays instead of straight to their destination. A connection to a name within
/// `matchDomains` (or equal to one of `matchFQDNs`) goes through the relays — every connection
/// when both lists are empty — unless its name is within `excludedDomains` or equal to one of
/// `excludedFQDNs`, which win (``routesThroughRelays(host:)``).
public struct RelayProtocol: Sendable, Hashable, Codable {
    /// The relays, the first reached directly and each next one through those before it.
    public var relays: [RelayHop]
    /// Domains whose names (the domain itself and its subdomains) go through the relays.
    public var matchDomains: [String]
    /// Domains whose names never go through the relays, whatever `matchDomains` says.
    public var excludedDomains: [String]
    /// Exact names that go through the relays (`NERelayManager.matchFQDNs`).
    public var matchFQDNs: [String]
    /// Exact names that never go through the relays (`NERelayManager.excludedFQDNs`).
    public var excludedFQDNs: [String]
    /// Whether names may be resolved by the machine's resolver when the relay's DoH resolver
    /// fails (the profile's `AllowDNSFailover`); off, such a connection fails.
    public var allowsDNSFailover: Bool
    /// The apps whose connections the relays take (per-app relays); empty: every program's.
    /// Apple binds managed apps to a relay configuration by MDM (the apps' `RelayUUID`); here the
    /// apps are named as a per-app VPN's are. A bound app's connections to names the relays do
    /// not take still go direct.
    public var appRules: [AppRule]
    /// The Privacy Pass issuer (RFC 9578) that gives tokens for relays asking for them (407 with
    /// a `PrivateToken` challenge naming this issuer's host, RFC 9577 §2.1): its origin,
    /// `https://HOST[:PORT]`. A NetExt addition: Apple's relay settings name no issuer (its own
    /// relays' tokens come from Apple's accounts). Each connection to a relay spends one fresh
    /// token, so the relay cannot link two connections of one user.
    public var privacyPassIssuerURL: String?
    /// The secret store's reference for the credential the issuer takes
    /// (`Authorization: Bearer`); netextd sets it from the saving request's secret and hands the
    /// value to the provider when it starts, never in the configuration.
    public var privacyPassTokenReference: String?

    /// Checks a Privacy Pass issuer's URL as ``privacyPassIssuerURL`` must be (https, the
    /// issuer's origin), naming `field` in the refusal.
    public static func checkIssuerURL(_ text: String, field: String) throws(NetExtError) {
        try RelayValidation.checkIssuerURL(text, field: field)
    }

    /// The most relays one configuration chains (each adds a TLS session and a round trip).
    public static let maximumRelays = 4

    /// The built-in provider netextd runs relay configurations with (`netext-relay-provider`,
    /// a transparent proxy; its manifest ships with NetExt).
    public static let providerBundleIdentifier = "com.netext.relay"
    /// The same provider for per-app relays, registered as an app proxy (netextd hands it the
    /// bound apps' flows; it carries those the relays do not take directly).
    public static let perAppProviderBundleIdentifier = "com.netext.relay.per-app"

    /// The source netextd gives the flows of its own resolver to a relay's DNS-over-HTTPS server
    /// (`RelayHop.dnsOverHTTPSURL`): such a flow has no address (its remote address is the
    /// unspecified one) and goes through the relays to its `remoteHostname`, whatever the
    /// match and excluded domains say.
    public static let resolverFlowSource = "com.netext.netextd.relay-dns"

    /// The DNS-over-HTTPS URL names go to while the relays run: the first relay's that has one
    /// (reached through the whole chain).
    public var dnsOverHTTPSURL: String? { relays.lazy.compactMap(\.dnsOverHTTPSURL).first }

    /// Whether the relays take only some apps' connections.
    public var isPerApp: Bool { !appRules.isEmpty }

    public init(
        relays: [RelayHop],
        matchDomains: [String] = [],
        excludedDomains: [String] = [],
        matchFQDNs: [String] = [],
        excludedFQDNs: [String] = [],
        allowsDNSFailover: Bool = false,
        appRules: [AppRule] = [],
        privacyPassIssuerURL: String? = nil,
        privacyPassTokenReference: String? = nil
    ) {
        self.privacyPassIssuerURL = privacyPassIssuerURL
        self.privacyPassTokenReference = privacyPassTokenReference
        self.relays = relays
        self.matchDomains = matchDomains
        self.excludedDomains = excludedDomains
        self.matchFQDNs = matchFQDNs
        self.excludedFQDNs = excludedFQDNs
        self.allowsDNSFailover = allowsDNSFailover
        self.appRules = appRules
    }

    /// Whether a connection to `host` (a name or an address) goes through the relays.
    /// Names compare without regard to case or a trailing dot, domains on label boundaries
    /// (`a.example.com` is within `example.com`, `badexample.com` is not).
    public func routesThroughRelays(host: String) -> Bool {
        let name = HostName.normalized(host) ?? host.lowercased()
        let normalize = { (entry: String) in HostName.normalized(entry.hasPrefix(".") ? String(entry.dropFirst()) : entry) }
        if excludedFQDNs.contains(where: { normalize($0) == name }) { return false }
        if excludedDomains.contains(where: { normalize($0).map { HostName.host(name, isWithin: $0) } ?? false }) { return false }
        if matchDomains.isEmpty && matchFQDNs.isEmpty { return true }
        if matchFQDNs.contains(where: { normalize($0) == name }) { return true }
        return matchDomains.contains(where: { normalize($0).map { HostName.host(name, isWithin: $0) } ?? false })
    }

    private enum CodingKeys: String, CodingKey {
        case relays, matchDomains, excludedDomains, matchFQDNs, excludedFQDNs, allowsDNSFailover, appRules
        case privacyPassIssuerURL, privacyPassTokenReference
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        relays = try container.decode([RelayHop].self, forKey: .relays)
        matchDomains = try container.decodeIfPresent([String].self, forKey: .matchDomains) ?? []
        excludedDomains = try container.decodeIfPresent([String].self, forKey: .excludedDomains) ?? []
        matchFQDNs = try container.decodeIfPresent([String].self, forKey: .matchFQDNs) ?? []
        excludedFQDNs = try container.decodeIfPresent([String].self, forKey: .excludedFQDNs) ?? []
        allowsDNSFailover = try container.decodeIfPresent(Bool.self, forKey: .allowsDNSFailover) ?? false
        appRules = try container.decodeIfPresent([AppRule].self, forKey: .appRules) ?? []
        privacyPassIssuerURL = try container.decodeIfPresent(String.self, forKey: .privacyPassIssuerURL)
        privacyPassTokenReference = try container.decodeIfPresent(String.self, forKey: .privacyPassTokenReference)
    }
}
