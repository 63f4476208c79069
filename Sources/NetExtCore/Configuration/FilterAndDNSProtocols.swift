/// Content filter settings, as Apple's `NEFilterProviderConfiguration`.
public struct ContentFilterProtocol: Sendable, Hashable, Codable {
    public var filterDataProviderBundleIdentifier: String
    public var filterControlProviderBundleIdentifier: String?
    /// The organization named on the block page.
    public var organization: String?
    public var serverAddress: String?
    public var vendorConfiguration: [String: JSONValue]
    /// Whether flows pass (`false`) or are dropped (`true`) when the provider is unavailable.
    public var failClosed: Bool
    /// The block page's "request access" link (http, https or mailto), if any.
    public var requestAccessURL: String?
    /// The link's text (default "Request access").
    public var requestAccessText: String?

    public init(
        filterDataProviderBundleIdentifier: String,
        filterControlProviderBundleIdentifier: String? = nil,
        organization: String? = nil,
        serverAddress: String? = nil,
        vendorConfiguration: [String: JSONValue] = [:],
        failClosed: Bool = false,
        requestAccessURL: String? = nil,
        requestAccessText: String? = nil
    ) {
        self.requestAccessURL = requestAccessURL
        self.requestAccessText = requestAccessText
        self.filterDataProviderBundleIdentifier = filterDataProviderBundleIdentifier
        self.filterControlProviderBundleIdentifier = filterControlProviderBundleIdentifier
        self.organization = organization
        self.serverAddress = serverAddress
        self.vendorConfiguration = vendorConfiguration
        self.failClosed = failClosed
    }
}

/// URL filter settings, as Apple's `NEURLFilterManager`.
public struct URLFilterProtocol: Sendable, Hashable, Codable {
    public var pirServerURL: String
    public var pirPrivacyPassIssuerURL: String
    public var pirAuthenticationTokenReference: String?
    public var controlProviderBundleIdentifier: String
    /// Seconds between prefilter fetches (default 86400, minimum 2700).
    public var prefilterFetchInterval: Double
    public var shouldFailClosed: Bool
    /// The Oblivious HTTP relay queries go through.
    public var relayURL: String?
    /// Whether the service URLs may have paths, other ports and plain http, as Apple allows
    /// for an app installed from Xcode during development. Off (the default), both must be
    /// host-only https URLs, each service on a name of its own, as Apple requires of a deployed
    /// app since iOS and macOS 26.4 (``URLFilterServiceURL``).
    public var allowsDevelopmentURLs: Bool

    public static let defaultPrefilterFetchInterval: Double = 86_400
    public static let minimumPrefilterFetchInterval: Double = 2_700

    public init(
        pirServerURL: String,
        pirPrivacyPassIssuerURL: String,
        pirAuthenticationTokenReference: String? = nil,
        controlProviderBundleIdentifier: String,
        prefilterFetchInterval: Double = URLFilterProtocol.defaultPrefilterFetchInterval,
        shouldFailClosed: Bool = false,
        relayURL: String? = nil,
        allowsDevelopmentURLs: Bool = false
    ) {
        self.pirServerURL = pirServerURL
        self.pirPrivacyPassIssuerURL = pirPrivacyPassIssuerURL
        self.pirAuthenticationTokenReference = pirAuthenticationTokenReference
        self.controlProviderBundleIdentifier = controlProviderBundleIdentifier
        self.prefilterFetchInterval = prefilterFetchInterval
        self.shouldFailClosed = shouldFailClosed
        self.relayURL = relayURL
        self.allowsDevelopmentURLs = allowsDevelopmentURLs
    }

    private enum CodingKeys: String, CodingKey {
        case pirServerURL, pirPrivacyPassIssuerURL, pirAuthenticationTokenReference, controlProviderBundleIdentifier
        case prefilterFetchInterval, shouldFailClosed, relayURL, allowsDevelopmentURLs
    }

    /// Reads configurations stored before `allowsDevelopmentURLs` existed as development ones:
    /// they were accepted with any http(s) URL, and a stored configuration must stay readable.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        pirServerURL = try container.decode(String.self, forKey: .pirServerURL)
        pirPrivacyPassIssuerURL = try container.decode(String.self, forKey: .pirPrivacyPassIssuerURL)
        pirAuthenticationTokenReference = try container.decodeIfPresent(String.self, forKey: .pirAuthenticationTokenReference)
        controlProviderBundleIdentifier = try container.decode(String.self, forKey: .controlProviderBundleIdentifier)
        prefilterFetchInterval = try container.decode(Double.self, forKey: .prefilterFetchInterval)
        shouldFailClosed = try container.decode(Bool.self, forKey: .shouldFailClosed)
        relayURL = try container.decodeIfPresent(String.self, forKey: .relayURL)
        allowsDevelopmentURLs = try container.decodeIfPresent(Bool.self, forKey: .allowsDevelopmentURLs) ?? true
    }
}

/// System DNS settings, as Apple's `NEDNSSettingsManager.dnsSettings`: the servers the whole
/// machine's names are resolved by (or, with `matchDomains`, just the names within them), in
/// the clear (`NEDNSSettings`), over TLS (`NEDNSOverTLSSettings`, RFC 7858) or over HTTPS
/// (`NEDNSOverHTTPSSettings`, RFC 8484) — or, beyond Apple's, as Oblivious DNS over HTTPS
/// (RFC 9230) through a proxy. netextd's resolver does the encrypted talking; the resolver file
/// points at it. A VPN's DNS beats these settings where both would answer.
public struct DNSSettingsProtocol: Sendable, Hashable, Codable {
    public enum Transport: String, Sendable, Hashable, Codable, CaseIterable {
        case cleartext
        case overTLS = "tls"
        case overHTTPS = "https"
        /// Oblivious DoH (RFC 9230): queries sealed to the target (`serverURL`) and posted
        /// through the proxy (`proxyURL`, reached at `servers`). NetExt's addition.
        case oblivious = "odoh"
    }

    /// How a DoH query travels (RFC 8484 §4.1): POST (the body) or GET (`?dns=` and the message
    /// in base64url, which HTTP caches can keep). NetExt's addition; POST by default.
    public enum HTTPMethod: String, Sendable, Hashable, Codable, CaseIterable {
        case post = "POST"
        case get = "GET"
    }

    /// How the servers are asked. NetExt's addition.
    public enum ServerSelection: String, Sendable, Hashable, Codable, CaseIterable {
        /// One after another, in order (a server that failed lately asked last): the default.
        case inOrder = "in-order"
        /// Every server at once; the first answer wins (more queries, the fastest server's time).
        case parallel
    }

    public var transport: Transport
    /// DNS over HTTPS: POST (default) or GET.
    public var httpMethod: HTTPMethod
    /// In order (default) or all at once.
    public var serverSelection: ServerSelection
    /// The servers' IP addresses, tried in order. Over HTTPS they are where the URL's host is
    /// reached, so that its name is never looked up in the clear.
    public var servers: [String]
    /// DNS over TLS: the name the servers' certificates must carry (nil: checked against the
    /// address).
    public var serverName: String?
    /// DNS over HTTPS: the URL queries are posted to (`https://host[:port]/path`). Oblivious
    /// DoH: the target's URL (its name is sent to the proxy, never looked up).
    public var serverURL: String?
    /// Oblivious DoH: the proxy's URL (`https://host[:port]/path`), reached at `servers`.
    public var proxyURL: String?
    /// Oblivious DoH: the target's `ObliviousDoHConfigs` (RFC 9230 §5) in base64, pinned; nil:
    /// fetched through the proxy (NetExt's proxy serves them) and fetched again when the
    /// target's keys change.
    public var obliviousConfigs: String?
    /// Only names within these domains use these servers (Apple's supplemental match domains);
    /// empty: every name.
    public var matchDomains: [String]
    /// When every server fails, ask the servers the resolver file had before, in the clear
    /// (NetExt's addition; default false: the query fails, nothing leaks).
    public var allowsCleartextFallback: Bool
    /// Block DNS (ports 53 and 853, UDP and TCP) from every program but netextd while these
    /// settings are enabled, as the profile key `ProhibitDisablement` asks: a program cannot go
    /// around them with a resolver of its own.
    public var prohibitsOtherDNS: Bool
    /// DNS over TLS or HTTPS: the client identity sent when a server asks for one (Apple's
    /// `identityReference`, a keychain reference there): here the path of a PEM file holding the
    /// certificate, its chain and the private key, which netextd reads and which only its owner
    /// may read. Nil: no client certificate.
    public var identityReference: String?

    public init(
        transport: Transport = .cleartext, servers: [String], serverName: String? = nil, serverURL: String? = nil,
        proxyURL: String? = nil, obliviousConfigs: String? = nil,
        matchDomains: [String] = [], allowsCleartextFallback: Bool = false, prohibitsOtherDNS: Bool = false,
        httpMethod: HTTPMethod = .post, serverSelection: ServerSelection = .inOrder, identityReference: String? = nil
    ) {
        self.identityReference = identityReference
        self.transport = transport
        self.httpMethod = httpMethod
        self.serverSelection = serverSelection
        self.servers = servers
        self.serverName = serverName
        self.serverURL = serverURL
        self.proxyURL = proxyURL
        self.obliviousConfigs = obliviousConfigs
        self.matchDomains = matchDomains
        self.allowsCleartextFallback = allowsCleartextFallback
        self.prohibitsOtherDNS = prohibitsOtherDNS
    }

    private enum CodingKeys: String, CodingKey {
        case transport, servers, serverName, serverURL, proxyURL, obliviousConfigs, matchDomains, allowsCleartextFallback, prohibitsOtherDNS
        case httpMethod, serverSelection, identityReference
    }

    /// Reads configurations stored before `serverURL` existed, whose DoH URL was in `serverName`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        transport = try container.decode(Transport.self, forKey: .transport)
        servers = try container.decode([String].self, forKey: .servers)
        serverName = try container.decodeIfPresent(String.self, forKey: .serverName)
        serverURL = try container.decodeIfPresent(String.self, forKey: .serverURL)
        proxyURL = try container.decodeIfPresent(String.self, forKey: .proxyURL)
        obliviousConfigs = try container.decodeIfPresent(String.self, forKey: .obliviousConfigs)
        if transport == .overHTTPS, serverURL == nil, let name = serverName, name.lowercased().hasPrefix("https://") {
            serverURL = name
            serverName = nil
        }
        matchDomains = try container.decodeIfPresent([String].self, forKey: .matchDomains) ?? []
        allowsCleartextFallback = try container.decodeIfPresent(Bool.self, forKey: .allowsCleartextFallback) ?? false
        prohibitsOtherDNS = try container.decodeIfPresent(Bool.self, forKey: .prohibitsOtherDNS) ?? false
        httpMethod = try container.decodeIfPresent(HTTPMethod.self, forKey: .httpMethod) ?? .post
        serverSelection = try container.decodeIfPresent(ServerSelection.self, forKey: .serverSelection) ?? .inOrder
        identityReference = try container.decodeIfPresent(String.self, forKey: .identityReference)
    }
}
