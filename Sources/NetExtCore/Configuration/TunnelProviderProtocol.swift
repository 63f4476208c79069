/// The protocol settings of a provider-run VPN, as Apple's `NETunnelProviderProtocol`.
public struct TunnelProviderProtocol: Sendable, Hashable, Codable {
    /// Which kind of tunnel provider runs this configuration (profile key `ProviderType`).
    public enum ProviderType: String, Sendable, Hashable, Codable, CaseIterable {
        case packetTunnel = "packet-tunnel"
        case appProxy = "app-proxy"
        /// A transparent proxy (Apple's `NETransparentProxyManager`): the flows its network
        /// rules name, from every program, go to the provider; the ones it declines go direct.
        case transparentProxy = "transparent-proxy"
        /// A DNS proxy (Apple's `NEDNSProxyManager` with `NEDNSProxyProviderProtocol`): every
        /// program's DNS flows (UDP and TCP to port 53) go to the provider, which answers them
        /// itself; the ones it declines go on to the server they were sent to.
        case dnsProxy = "dns-proxy"
    }

    /// The bundle identifier of the provider that runs the tunnel.
    public var providerBundleIdentifier: String
    public var providerType: ProviderType

    /// The extension point the provider's manifest must declare.
    public var extensionPoint: ProviderManifest.ExtensionPoint {
        switch providerType {
        case .packetTunnel: .packetTunnel
        case .appProxy: .appProxy
        case .transparentProxy: .transparentProxy
        case .dnsProxy: .dnsProxy
        }
    }
    /// The VPN server's address or host name.
    public var serverAddress: String
    /// Free-form settings handed to the provider (profile key `VendorConfig`).
    public var providerConfiguration: [String: JSONValue]
    public var username: String?
    /// A reference to the password in netextd's secret store; the password itself is never
    /// part of the readable configuration.
    public var passwordReference: String?
    /// Per-app VPN: the `VPNUUID` apps are mapped to (payload `com.apple.vpn.managed.applayer`).
    public var perAppUUID: String?
    /// Route all traffic into the tunnel and block everything else (kill switch).
    public var includeAllNetworks: Bool
    /// Keep local networks reachable outside the tunnel.
    public var excludeLocalNetworks: Bool
    /// Enforce the tunnel's routes even over more specific local routes.
    public var enforceRoutes: Bool
    /// Per-app VPN (``isPerApp``): the apps whose flows the tunnel carries, whatever their
    /// destination (Apple's `NETunnelProviderManager.appRules`); other apps' flows never enter it.
    public var appRules: [AppRule]
    /// A tunnel that routes by destination: the apps whose flows bypass it and leave directly,
    /// as if it were not there (exclude mode; also past the kill switch).
    public var excludedAppRules: [AppRule]

    /// Whether the tunnel routes by source app rather than by destination: a per-app VPN, as a
    /// profile's `com.apple.vpn.managed.applayer` payload (with its `VPNUUID`) or
    /// `netext create --per-app` makes one.
    public var isPerApp: Bool { perAppUUID != nil }

    public init(
        providerBundleIdentifier: String,
        providerType: ProviderType = .packetTunnel,
        serverAddress: String,
        providerConfiguration: [String: JSONValue] = [:],
        username: String? = nil,
        passwordReference: String? = nil,
        perAppUUID: String? = nil,
        includeAllNetworks: Bool = false,
        excludeLocalNetworks: Bool = false,
        enforceRoutes: Bool = false,
        appRules: [AppRule] = [],
        excludedAppRules: [AppRule] = []
    ) {
        self.providerBundleIdentifier = providerBundleIdentifier
        self.providerType = providerType
        self.serverAddress = serverAddress
        self.providerConfiguration = providerConfiguration
        self.username = username
        self.passwordReference = passwordReference
        self.perAppUUID = perAppUUID
        self.includeAllNetworks = includeAllNetworks
        self.excludeLocalNetworks = excludeLocalNetworks
        self.enforceRoutes = enforceRoutes
        self.appRules = appRules
        self.excludedAppRules = excludedAppRules
    }
}

extension TunnelProviderProtocol {
    private enum CodingKeys: String, CodingKey {
        case providerBundleIdentifier, providerType, serverAddress, providerConfiguration, username, passwordReference, perAppUUID
        case includeAllNetworks, excludeLocalNetworks, enforceRoutes, appRules, excludedAppRules
    }

    /// Configurations stored before per-app routing existed have no app rules.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            providerBundleIdentifier: try container.decode(String.self, forKey: .providerBundleIdentifier),
            providerType: try container.decode(ProviderType.self, forKey: .providerType),
            serverAddress: try container.decode(String.self, forKey: .serverAddress),
            providerConfiguration: try container.decode([String: JSONValue].self, forKey: .providerConfiguration),
            username: try container.decodeIfPresent(String.self, forKey: .username),
            passwordReference: try container.decodeIfPresent(String.self, forKey: .passwordReference),
            perAppUUID: try container.decodeIfPresent(String.self, forKey: .perAppUUID),
            includeAllNetworks: try container.decode(Bool.self, forKey: .includeAllNetworks),
            excludeLocalNetworks: try container.decode(Bool.self, forKey: .excludeLocalNetworks),
            enforceRoutes: try container.decode(Bool.self, forKey: .enforceRoutes),
            appRules: try container.decodeIfPresent([AppRule].self, forKey: .appRules) ?? [],
            excludedAppRules: try container.decodeIfPresent([AppRule].self, forKey: .excludedAppRules) ?? [])
    }

    /// Checks the app rules: a per-app VPN has only `appRules`, a tunnel that routes by
    /// destination only `excludedAppRules`; an app appears once; `matchDomains` limits a per-app
    /// VPN's apps and is refused on excluded ones.
    public func validateAppRules() throws(NetExtError) {
        if isPerApp && !excludedAppRules.isEmpty {
            throw .invalid("excludedAppRules: a per-app VPN carries only its own apps, so no app needs excluding (unbind it instead)")
        }
        if !isPerApp && !appRules.isEmpty {
            throw .invalid("appRules: only a per-app VPN (perAppUUID set; netext create --per-app) carries apps by source; this tunnel routes by destination (exclude apps with excludedAppRules)")
        }
        let rules = appRules + excludedAppRules
        if rules.count > Self.maximumAppRules { throw .invalid("appRules: \(rules.count) rules; at most \(Self.maximumAppRules) are accepted") }
        var seen = Set<AppIdentifier>()
        for rule in rules {
            if !seen.insert(rule.matchSigningIdentifier).inserted {
                throw .invalid("appRules: \(rule.matchSigningIdentifier) appears more than once")
            }
        }
        if providerType == .appProxy, let rule = appRules.first(where: { !$0.matchDomains.isEmpty }) {
            throw .invalid("appRules: matchDomains (\(rule.matchSigningIdentifier)) is not supported for an app proxy yet; its provider sees every flow of the app and may decline the ones it does not want")
        }
        if providerType == .dnsProxy, let rule = appRules.first(where: { !$0.matchDomains.isEmpty }) {
            throw .invalid("appRules: matchDomains (\(rule.matchSigningIdentifier)) does not apply to a DNS proxy: its provider receives every DNS flow of the app, whatever the name")
        }
        if providerType == .transparentProxy && (isPerApp || !appRules.isEmpty || !excludedAppRules.isEmpty) {
            throw .invalid("appRules: a transparent proxy takes flows by its provider's network rules, not by app (use an app proxy, provider type app-proxy, for apps)")
        }
        if providerType == .dnsProxy && !excludedAppRules.isEmpty {
            throw .invalid("excludedAppRules: a DNS proxy takes every program's DNS, or only that of the apps bound to it; no app needs excluding")
        }
        if providerType == .appProxy && !excludedAppRules.isEmpty {
            throw .invalid("excludedAppRules: an app proxy carries only the apps bound to it; no app needs excluding")
        }
        for rule in excludedAppRules where !rule.matchDomains.isEmpty {
            throw .invalid("excludedAppRules: matchDomains (\(rule.matchSigningIdentifier)) limits what a per-app VPN carries; an excluded app bypasses the tunnel for every destination")
        }
    }

    /// The most app rules one configuration holds.
    public static let maximumAppRules = 1_024
}

/// The protocol settings of the built-in IKEv2 client, as Apple's `NEVPNProtocolIKEv2`.
public struct IKEv2Protocol: Sendable, Hashable, Codable {
    public enum AuthenticationMethod: String, Sendable, Hashable, Codable, CaseIterable {
        case none
        case certificate
        case sharedSecret
    }

    public var serverAddress: String
    public var remoteIdentifier: String?
    public var localIdentifier: String?
    public var authenticationMethod: AuthenticationMethod
    public var useExtendedAuthentication: Bool
    public var username: String?
    public var passwordReference: String?
    public var sharedSecretReference: String?

    public init(
        serverAddress: String,
        remoteIdentifier: String? = nil,
        localIdentifier: String? = nil,
        authenticationMethod: AuthenticationMethod = .none,
        useExtendedAuthentication: Bool = false,
        username: String? = nil,
        passwordReference: String? = nil,
        sharedSecretReference: String? = nil
    ) {
        self.serverAddress = serverAddress
        self.remoteIdentifier = remoteIdentifier
        self.localIdentifier = localIdentifier
        self.authenticationMethod = authenticationMethod
        self.useExtendedAuthentication = useExtendedAuthentication
        self.username = username
        self.passwordReference = passwordReference
        self.sharedSecretReference = sharedSecretReference
    }
}
