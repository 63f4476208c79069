import Foundation

/// A connect-on-demand rule, as Apple's `NEOnDemandRule` family: an action plus match
/// conditions. Rules are evaluated in order; the first whose conditions all match wins.
public struct OnDemandRule: Sendable, Hashable, Codable {
    /// What to do when the rule matches.
    public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        /// Start the VPN (`NEOnDemandRuleConnect`).
        case connect
        /// Stop the VPN and do not start it (`NEOnDemandRuleDisconnect`).
        case disconnect
        /// Leave the VPN as it is (`NEOnDemandRuleIgnore`).
        case ignore
        /// Decide per destination domain (`NEOnDemandRuleEvaluateConnection`).
        case evaluateConnection
    }

    /// The kind of the primary network interface (`NEOnDemandRuleInterfaceType`).
    public enum InterfaceType: String, Sendable, Hashable, Codable, CaseIterable {
        case any
        case ethernet
        case wiFi
        case cellular
    }

    public var action: Action
    /// Matches when the primary interface is of this kind (`.any` always matches).
    public var interfaceTypeMatch: InterfaceType
    /// Matches when the current Wi-Fi network's SSID is one of these.
    public var ssidMatch: [String]?
    /// Matches when the current DNS search domain is one of these (`*.example.com` allowed).
    public var dnsSearchDomainMatch: [String]?
    /// Matches when one of the current DNS servers is one of these addresses.
    public var dnsServerAddressMatch: [String]?
    /// Matches when an HTTP GET of this URL is answered with status 200.
    public var probeURL: URL?
    /// For `.evaluateConnection`: the per-domain rules.
    public var connectionRules: [EvaluateConnectionRule]?

    public init(
        action: Action,
        interfaceTypeMatch: InterfaceType = .any,
        ssidMatch: [String]? = nil,
        dnsSearchDomainMatch: [String]? = nil,
        dnsServerAddressMatch: [String]? = nil,
        probeURL: URL? = nil,
        connectionRules: [EvaluateConnectionRule]? = nil
    ) {
        self.action = action
        self.interfaceTypeMatch = interfaceTypeMatch
        self.ssidMatch = ssidMatch
        self.dnsSearchDomainMatch = dnsSearchDomainMatch
        self.dnsServerAddressMatch = dnsServerAddressMatch
        self.probeURL = probeURL
        self.connectionRules = connectionRules
    }

    /// `NEOnDemandRuleConnect` with an interface type match.
    public static func connect(interfaceTypeMatch: InterfaceType = .any) -> OnDemandRule {
        OnDemandRule(action: .connect, interfaceTypeMatch: interfaceTypeMatch)
    }

    /// `NEOnDemandRuleDisconnect` with an interface type match.
    public static func disconnect(interfaceTypeMatch: InterfaceType = .any) -> OnDemandRule {
        OnDemandRule(action: .disconnect, interfaceTypeMatch: interfaceTypeMatch)
    }
}

/// A per-domain rule of an `.evaluateConnection` on-demand rule (`NEEvaluateConnectionRule`).
public struct EvaluateConnectionRule: Sendable, Hashable, Codable {
    public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        /// Start the VPN if the domain cannot be reached without it.
        case connectIfNeeded
        /// Never start the VPN for these domains.
        case neverConnect
    }

    public var action: Action
    /// The destination domains this rule applies to.
    public var matchDomains: [String]
    /// DNS servers to resolve the domains with (used to decide reachability).
    public var useDNSServers: [String]?
    /// A URL whose HTTP 200 answer means the domain is reachable without the VPN.
    public var probeURL: URL?

    public init(action: Action, matchDomains: [String], useDNSServers: [String]? = nil, probeURL: URL? = nil) {
        self.action = action
        self.matchDomains = matchDomains
        self.useDNSServers = useDNSServers
        self.probeURL = probeURL
    }
}

extension OnDemandRule {
    /// An IP address, or the start of one followed by a single `*` ("10.0.*", "fd00:*"), as
    /// Apple's DNSServerAddressMatch allows.
    static func isAddressPattern(_ text: String) -> Bool {
        if IPAddressSyntax.isValid(text) { return true }
        guard text.hasSuffix("*"), text.filter({ $0 == "*" }).count == 1 else { return false }
        return text.dropLast().allSatisfy { $0.isHexDigit || $0 == "." || $0 == ":" }
    }

    /// Checks the rule's own consistency, naming the field at fault.
    public func validate(at path: String) throws(NetExtError) {
        if action == .evaluateConnection {
            guard let rules = connectionRules, !rules.isEmpty else {
                throw .invalid("\(path): an evaluateConnection rule needs at least one connection rule")
            }
            for (index, rule) in rules.enumerated() where rule.matchDomains.isEmpty {
                throw .invalid("\(path).connectionRules[\(index)]: matchDomains must not be empty")
            }
        } else if connectionRules != nil {
            throw .invalid("\(path): connectionRules are only valid with action evaluateConnection, not \(action.rawValue)")
        }
        for address in dnsServerAddressMatch ?? [] where !Self.isAddressPattern(address) {
            throw .invalid("\(path).dnsServerAddressMatch: '\(address)' is not an IP address or an address prefix ending in '*'")
        }
        if let url = probeURL, url.scheme != "http" && url.scheme != "https" {
            throw .invalid("\(path).probeURL: '\(url.absoluteString)' must be an http or https URL")
        }
    }
}
