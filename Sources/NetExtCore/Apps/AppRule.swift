/// Which app's traffic a per-app VPN carries, shaped after Apple's `NEAppRule`:
/// `matchSigningIdentifier` is the app's ``AppIdentifier`` (a code-signing identifier on Apple's
/// platforms), `matchPath` an executable that must also match (an absolute path, as on macOS),
/// and `matchDomains` limits the rule to connections to those domains and their subdomains
/// (empty: every destination). On Linux an app is also known by the systemd units its
/// launcher starts it in: the conventional `app-…-<ID>-….scope` names always, and
/// `matchUnits` for others (a snap's `snap.firefox.*`).
public struct AppRule: Sendable, Hashable, Codable {
    public var matchSigningIdentifier: AppIdentifier
    public var matchPath: String?
    public var matchDomains: [String]
    /// Unit name patterns besides systemd's conventional ones for the app.
    public var matchUnits: [UnitNamePattern]

    /// Checks the path and the domains, naming the one at fault.
    public init(matchSigningIdentifier: AppIdentifier, matchPath: String? = nil, matchDomains: [String] = [], matchUnits: [UnitNamePattern] = []) throws(NetExtError) {
        if let matchPath, !matchPath.hasPrefix("/") || matchPath.contains("\0") || matchPath.utf8.count > 4096 {
            throw .invalid("matchPath: '\(matchPath)' is not an absolute path to an executable")
        }
        var domains: [String] = []
        for domain in matchDomains {
            guard let normalized = HostName.normalized(domain) else {
                throw .invalid("matchDomains: '\(domain)' is not a domain name (ASCII letters, digits, '-', '_' and '.'; an IDN Punycoded)")
            }
            domains.append(normalized)
        }
        self.matchSigningIdentifier = matchSigningIdentifier
        self.matchPath = matchPath
        self.matchDomains = domains
        self.matchUnits = matchUnits
    }

    /// Whether a connection of this app to `host` (a name, or nil when only an address is
    /// known) falls under the rule.
    public func covers(host: String?) -> Bool {
        if matchDomains.isEmpty { return true }
        guard let host, let normalized = HostName.normalized(host) else { return false }
        return matchDomains.contains { HostName.host(normalized, isWithin: $0) }
    }

    private enum CodingKeys: String, CodingKey { case matchSigningIdentifier, matchPath, matchDomains, matchUnits }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let identifier = try container.decode(AppIdentifier.self, forKey: .matchSigningIdentifier)
        let path = try container.decodeIfPresent(String.self, forKey: .matchPath)
        let domains = try container.decodeIfPresent([String].self, forKey: .matchDomains) ?? []
        let units = try container.decodeIfPresent([UnitNamePattern].self, forKey: .matchUnits) ?? []
        do throws(NetExtError) {
            try self.init(matchSigningIdentifier: identifier, matchPath: path, matchDomains: domains, matchUnits: units)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }
}
