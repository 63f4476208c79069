import Foundation

/// One stored configuration: the common fields every kind has plus its protocol settings.
/// This is the readable part; secrets live in netextd's secret store and are referenced.
public struct Configuration: Sendable, Hashable, Codable, Identifiable {
    public var id: UUID
    /// Who created it. Set by netextd from the client's credentials, never trusted from input.
    public var owner: Owner
    /// The name shown to people (`localizedDescription`).
    public var localizedDescription: String
    public var isEnabled: Bool
    public var isOnDemandEnabled: Bool
    public var onDemandRules: [OnDemandRule]
    public var protocolConfiguration: ProtocolConfiguration
    /// The store's revision of this configuration; a save must name the revision it was loaded
    /// at (0 for a new configuration) or fail with `configurationStale`.
    public var revision: Int
    /// The configuration profile this configuration came from, if any.
    public var profileIdentifier: String?

    public init(
        id: UUID = UUID(),
        owner: Owner,
        localizedDescription: String,
        isEnabled: Bool = false,
        isOnDemandEnabled: Bool = false,
        onDemandRules: [OnDemandRule] = [],
        protocolConfiguration: ProtocolConfiguration,
        revision: Int = 0,
        profileIdentifier: String? = nil
    ) {
        self.id = id
        self.owner = owner
        self.localizedDescription = localizedDescription
        self.isEnabled = isEnabled
        self.isOnDemandEnabled = isOnDemandEnabled
        self.onDemandRules = onDemandRules
        self.protocolConfiguration = protocolConfiguration
        self.revision = revision
        self.profileIdentifier = profileIdentifier
    }

    public var kind: ConfigurationKind { protocolConfiguration.kind }

    /// Whether `name` names this configuration: its `localizedDescription`, compared without
    /// regard to case (how `netext` and the control protocol look names up).
    public func isNamed(_ name: String) -> Bool {
        localizedDescription.caseInsensitiveCompare(name) == .orderedSame
    }

    /// Whether this is an enterprise (provider-run) VPN, of which only one may be enabled.
    public var isEnterpriseVPN: Bool { kind == .tunnelProvider }
}

extension Configuration {
    /// The tunnel provider's settings (a packet tunnel, app, transparent or DNS proxy); nil for
    /// another kind of configuration.
    public var tunnelProviderSettings: TunnelProviderProtocol? {
        if case .tunnelProvider(let settings) = protocolConfiguration { return settings }
        return nil
    }

    /// Checks every field, naming the first one at fault.
    public func validate() throws(NetExtError) {
        let name = localizedDescription.trimmingCharacters(in: .whitespacesAndNewlines)
        if name.isEmpty { throw .invalid("localizedDescription must not be empty") }
        if localizedDescription.count > 256 { throw .invalid("localizedDescription is longer than 256 characters") }
        for (index, rule) in onDemandRules.enumerated() {
            try rule.validate(at: "onDemandRules[\(index)]")
        }
        switch protocolConfiguration {
        case .tunnelProvider(let settings):
            try Self.requireIdentifier(settings.providerBundleIdentifier, field: "providerBundleIdentifier")
            // A DNS proxy's provider chooses its own servers: it may name none.
            if settings.providerType != .dnsProxy || !settings.serverAddress.isEmpty {
                try Self.requireHost(settings.serverAddress, field: "serverAddress")
            }
            try settings.validateAppRules()
        case .personalVPN(let settings):
            try Self.requireHost(settings.serverAddress, field: "serverAddress")
        case .contentFilter(let settings):
            try Self.requireIdentifier(settings.filterDataProviderBundleIdentifier, field: "filterDataProviderBundleIdentifier")
            if let control = settings.filterControlProviderBundleIdentifier {
                try Self.requireIdentifier(control, field: "filterControlProviderBundleIdentifier")
            }
            if let link = settings.requestAccessURL {
                guard let url = URL(string: link), ["http", "https", "mailto"].contains(url.scheme ?? "") else {
                    throw .invalid("requestAccessURL: '\(link)' is not an http, https or mailto URL")
                }
            }
            if (settings.organization?.count ?? 0) > 200 || (settings.requestAccessText?.count ?? 0) > 200 {
                throw .invalid("organization and requestAccessText are limited to 200 characters")
            }
        case .urlFilter(let settings):
            try Self.requireIdentifier(settings.controlProviderBundleIdentifier, field: "controlProviderBundleIdentifier")
            try Self.requireHTTPSURL(settings.pirServerURL, field: "pirServerURL")
            try Self.requireHTTPSURL(settings.pirPrivacyPassIssuerURL, field: "pirPrivacyPassIssuerURL")
            if !settings.allowsDevelopmentURLs {
                for (value, field) in [(settings.pirServerURL, "pirServerURL"), (settings.pirPrivacyPassIssuerURL, "pirPrivacyPassIssuerURL")] {
                    if let problem = URLFilterServiceURL.deploymentProblem(value, field: field) { throw .invalid(problem) }
                }
            }
            if settings.prefilterFetchInterval < URLFilterProtocol.minimumPrefilterFetchInterval {
                throw .invalid("prefilterFetchInterval: \(Int(settings.prefilterFetchInterval)) s is below the minimum of 2700 s")
            }
        case .relay(let settings):
            try RelayValidation.validate(settings)
            // Match and excluded domains choose the connections; rules only say on which
            // networks the relays are in force.
            if let index = onDemandRules.firstIndex(where: { $0.action == .evaluateConnection }) {
                throw .invalid("onDemandRules[\(index)]: EvaluateConnection is for VPNs; relays take matchDomains and excludedDomains, and rules Connect (in force), Disconnect (not) or Ignore")
            }
        case .dnsSettings(let settings):
            try DNSSettingsValidation.validate(settings)
            // Rules decide whether the settings are in force; there is no connection whose
            // names EvaluateConnection could judge.
            if let index = onDemandRules.firstIndex(where: { $0.action == .evaluateConnection }) {
                throw .invalid("onDemandRules[\(index)]: EvaluateConnection is for VPNs; DNS settings take Connect (in force), Disconnect (not) or Ignore")
            }
        }
    }

    private static func requireIdentifier(_ value: String, field: String) throws(NetExtError) {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: ".-_"))
        if value.isEmpty { throw .invalid("\(field) must not be empty") }
        if value.unicodeScalars.contains(where: { !allowed.contains($0) }) || value.count > 255 {
            throw .invalid("\(field): '\(value)' is not a bundle identifier (letters, digits, '.', '-', '_')")
        }
    }

    private static func requireHost(_ value: String, field: String) throws(NetExtError) {
        if value.isEmpty { throw .invalid("\(field) must not be empty") }
        if value.contains(where: { $0 == " " || $0 == "/" }) || value.count > 255 {
            throw .invalid("\(field): '\(value)' is not a host name or address")
        }
    }

    private static func requireHTTPSURL(_ value: String, field: String) throws(NetExtError) {
        guard let url = URL(string: value), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw .invalid("\(field): '\(value)' is not an http(s) URL")
        }
    }
}
