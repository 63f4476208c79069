import Foundation

/// What on-demand rules look at: the network the machine is on now.
public struct NetworkEnvironment: Sendable, Hashable, CustomStringConvertible {
    /// The interface of the default route (nil: no network).
    public var primaryInterface: String?
    /// Its kind (ethernet, wiFi or cellular); nil without a network.
    public var interfaceType: OnDemandRule.InterfaceType?
    /// The Wi-Fi network's name, when the machine can tell it (never on this platform yet).
    public var ssid: String?
    public var dnsSearchDomains: [String]
    public var dnsServers: [String]

    public init(primaryInterface: String? = nil, interfaceType: OnDemandRule.InterfaceType? = nil, ssid: String? = nil, dnsSearchDomains: [String] = [], dnsServers: [String] = []) {
        self.primaryInterface = primaryInterface
        self.interfaceType = interfaceType
        self.ssid = ssid
        self.dnsSearchDomains = dnsSearchDomains
        self.dnsServers = dnsServers
    }

    public var description: String {
        "interface=\(primaryInterface ?? "-")(\(interfaceType?.rawValue ?? "none")) search=\(dnsSearchDomains) dns=\(dnsServers)"
    }
}

/// Apple's on-demand evaluation: rules in order, the first whose every condition matches decides.
public enum OnDemandEvaluator {
    /// The first matching rule, or nil. `probe` performs an HTTP GET of a rule's probe URL and
    /// says whether it answered 200; it is only called for rules whose other conditions match.
    public static func firstMatch(_ rules: [OnDemandRule], in environment: NetworkEnvironment, probe: (URL) -> Bool) -> OnDemandRule? {
        rules.first { matches($0, environment, probe: probe) }
    }

    public static func matches(_ rule: OnDemandRule, _ environment: NetworkEnvironment, probe: (URL) -> Bool) -> Bool {
        if rule.interfaceTypeMatch != .any && rule.interfaceTypeMatch != environment.interfaceType { return false }
        if let ssids = rule.ssidMatch {
            // Only a Wi-Fi network whose name is known can match.
            guard let ssid = environment.ssid, ssids.contains(ssid) else { return false }
        }
        if let patterns = rule.dnsSearchDomainMatch {
            guard environment.dnsSearchDomains.contains(where: { domain in patterns.contains { domainMatches(domain, pattern: $0) } }) else { return false }
        }
        if let patterns = rule.dnsServerAddressMatch {
            guard environment.dnsServers.contains(where: { server in patterns.contains { addressMatches(server, pattern: $0) } }) else { return false }
        }
        if let url = rule.probeURL, !probe(url) { return false }
        return true
    }

    /// "office.test" matches itself; "*.office.test" matches names below it (and itself).
    public static func domainMatches(_ domain: String, pattern: String) -> Bool {
        let domain = domain.lowercased().trimmingDots()
        var pattern = pattern.lowercased().trimmingDots()
        if pattern.hasPrefix("*.") {
            pattern.removeFirst(2)
            return domain == pattern || domain.hasSuffix("." + pattern)
        }
        return domain == pattern
    }

    /// Exact, or a prefix ending in "*" ("10.0.*" matches "10.0.0.53").
    public static func addressMatches(_ address: String, pattern: String) -> Bool {
        if pattern.hasSuffix("*") { return address.lowercased().hasPrefix(pattern.dropLast().lowercased()) }
        return address.lowercased() == pattern.lowercased()
    }

    /// What on-demand wants for a configuration in this environment.
    public enum Decision: String, Sendable, Hashable {
        /// Bring the VPN up (Connect).
        case connect
        /// Take it down (Disconnect).
        case disconnect
        /// Leave it as it is (Ignore, EvaluateConnection until a matching name is resolved, no match).
        case leave
    }

    public static func decision(_ rules: [OnDemandRule], in environment: NetworkEnvironment, probe: (URL) -> Bool) -> (Decision, rule: Int?) {
        guard let index = rules.firstIndex(where: { matches($0, environment, probe: probe) }) else { return (.leave, nil) }
        switch rules[index].action {
        case .connect: return (.connect, index)
        case .disconnect: return (.disconnect, index)
        case .ignore, .evaluateConnection: return (.leave, index)
        }
    }
}
