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

    public static let defaultPrefilterFetchInterval: Double = 86_400
    public static let minimumPrefilterFetchInterval: Double = 2_700

    public init(
        pirServerURL: String,
        pirPrivacyPassIssuerURL: String,
        pirAuthenticationTokenReference: String? = nil,
        controlProviderBundleIdentifier: String,
        prefilterFetchInterval: Double = URLFilterProtocol.defaultPrefilterFetchInterval,
        shouldFailClosed: Bool = false,
        relayURL: String? = nil
    ) {
        self.pirServerURL = pirServerURL
        self.pirPrivacyPassIssuerURL = pirPrivacyPassIssuerURL
        self.pirAuthenticationTokenReference = pirAuthenticationTokenReference
        self.controlProviderBundleIdentifier = controlProviderBundleIdentifier
        self.prefilterFetchInterval = prefilterFetchInterval
        self.shouldFailClosed = shouldFailClosed
        self.relayURL = relayURL
    }
}

/// MASQUE relay settings, as Apple's `NERelayManager`.
public struct RelayProtocol: Sendable, Hashable, Codable {
    /// The relays' HTTP/3 or HTTP/2 URLs, in order.
    public var relayURLs: [String]
    public var matchDomains: [String]
    public var excludedDomains: [String]

    public init(relayURLs: [String], matchDomains: [String] = [], excludedDomains: [String] = []) {
        self.relayURLs = relayURLs
        self.matchDomains = matchDomains
        self.excludedDomains = excludedDomains
    }
}

/// System DNS settings, as Apple's `NEDNSSettingsManager`.
public struct DNSSettingsProtocol: Sendable, Hashable, Codable {
    public enum Transport: String, Sendable, Hashable, Codable, CaseIterable {
        case cleartext
        case overTLS = "tls"
        case overHTTPS = "https"
    }

    public var transport: Transport
    public var servers: [String]
    /// DNS-over-TLS server name or DNS-over-HTTPS URL.
    public var serverName: String?
    public var matchDomains: [String]

    public init(transport: Transport = .cleartext, servers: [String], serverName: String? = nil, matchDomains: [String] = []) {
        self.transport = transport
        self.servers = servers
        self.serverName = serverName
        self.matchDomains = matchDomains
    }
}
