/// The kind-specific part of a configuration. Each case is one of the kinds of
/// configuration Apple's system has.
public enum ProtocolConfiguration: Sendable, Hashable {
    /// A personal VPN with the built-in IKEv2 client (`NEVPNManager` + `NEVPNProtocolIKEv2`).
    case personalVPN(IKEv2Protocol)
    /// An enterprise VPN run by a provider: packet tunnel or app proxy (`NETunnelProviderManager`).
    case tunnelProvider(TunnelProviderProtocol)
    /// A content filter (`NEFilterManager`).
    case contentFilter(ContentFilterProtocol)
    /// The privacy-preserving URL filter (`NEURLFilterManager`).
    case urlFilter(URLFilterProtocol)
    /// MASQUE relays (`NERelayManager`).
    case relay(RelayProtocol)
    /// System DNS settings (`NEDNSSettingsManager`).
    case dnsSettings(DNSSettingsProtocol)

    /// The kind, as a plain tag.
    public var kind: ConfigurationKind {
        switch self {
        case .personalVPN: .personalVPN
        case .tunnelProvider: .tunnelProvider
        case .contentFilter: .contentFilter
        case .urlFilter: .urlFilter
        case .relay: .relay
        case .dnsSettings: .dnsSettings
        }
    }
}

/// The kind of a configuration.
public enum ConfigurationKind: String, Sendable, Hashable, Codable, CaseIterable {
    case personalVPN = "personal-vpn"
    case tunnelProvider = "tunnel-provider"
    case contentFilter = "content-filter"
    case urlFilter = "url-filter"
    case relay = "relay"
    case dnsSettings = "dns-settings"
}

extension ProtocolConfiguration: Codable {
    private enum CodingKeys: String, CodingKey { case kind, settings }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try container.decode(ConfigurationKind.self, forKey: .kind)
        switch kind {
        case .personalVPN: self = .personalVPN(try container.decode(IKEv2Protocol.self, forKey: .settings))
        case .tunnelProvider: self = .tunnelProvider(try container.decode(TunnelProviderProtocol.self, forKey: .settings))
        case .contentFilter: self = .contentFilter(try container.decode(ContentFilterProtocol.self, forKey: .settings))
        case .urlFilter: self = .urlFilter(try container.decode(URLFilterProtocol.self, forKey: .settings))
        case .relay: self = .relay(try container.decode(RelayProtocol.self, forKey: .settings))
        case .dnsSettings: self = .dnsSettings(try container.decode(DNSSettingsProtocol.self, forKey: .settings))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        switch self {
        case .personalVPN(let settings): try container.encode(settings, forKey: .settings)
        case .tunnelProvider(let settings): try container.encode(settings, forKey: .settings)
        case .contentFilter(let settings): try container.encode(settings, forKey: .settings)
        case .urlFilter(let settings): try container.encode(settings, forKey: .settings)
        case .relay(let settings): try container.encode(settings, forKey: .settings)
        case .dnsSettings(let settings): try container.encode(settings, forKey: .settings)
        }
    }
}
