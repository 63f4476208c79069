/// The protocol settings of a provider-run VPN, as Apple's `NETunnelProviderProtocol`.
public struct TunnelProviderProtocol: Sendable, Hashable, Codable {
    /// Which kind of tunnel provider runs this configuration (profile key `ProviderType`).
    public enum ProviderType: String, Sendable, Hashable, Codable, CaseIterable {
        case packetTunnel = "packet-tunnel"
        case appProxy = "app-proxy"
    }

    /// The bundle identifier of the provider that runs the tunnel.
    public var providerBundleIdentifier: String
    public var providerType: ProviderType

    /// The extension point the provider's manifest must declare.
    public var extensionPoint: ProviderManifest.ExtensionPoint { providerType == .appProxy ? .appProxy : .packetTunnel }
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
        enforceRoutes: Bool = false
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
    }
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
