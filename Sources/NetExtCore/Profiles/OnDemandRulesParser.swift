import Foundation

/// Parses the `OnDemandEnabled` and `OnDemandRules` keys of a VPN payload's dictionary.
enum OnDemandRulesParser {
    static func parse(_ dictionary: PlistReader) throws(NetExtError) -> (enabled: Bool, rules: [OnDemandRule]) {
        let enabled = try dictionary.flag("OnDemandEnabled") ?? false
        let rules = try (dictionary.dictionaryArray("OnDemandRules") ?? []).map { (rule) throws(NetExtError) in try parseRule(rule) }
        return (enabled, rules)
    }

    private static func parseRule(_ rule: PlistReader) throws(NetExtError) -> OnDemandRule {
        guard let actionText = try rule.choice("Action", allowed: ["Connect", "Disconnect", "EvaluateConnection", "Ignore", "Allow"]) else {
            throw rule.fail("Action", "is required")
        }
        let action: OnDemandRule.Action
        switch actionText {
        case "Disconnect": action = .disconnect
        case "EvaluateConnection": action = .evaluateConnection
        case "Ignore": action = .ignore
        default: action = .connect  // "Allow" is Apple's deprecated spelling of Connect.
        }
        let interface: OnDemandRule.InterfaceType
        switch try rule.choice("InterfaceTypeMatch", allowed: ["Ethernet", "WiFi", "Cellular"]) {
        case "Ethernet": interface = .ethernet
        case "WiFi": interface = .wiFi
        case "Cellular": interface = .cellular
        default: interface = .any
        }
        var probe: URL?
        if let text = try rule.string("URLStringProbe") {
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
                throw rule.fail("URLStringProbe", "'\(text)' is not an http(s) URL")
            }
            probe = url
        }
        var connectionRules: [EvaluateConnectionRule]?
        if let parameters = try rule.dictionaryArray("ActionParameters") {
            connectionRules = try parameters.map { (parameter) throws(NetExtError) in try parseActionParameters(parameter) }
        }
        if action == .evaluateConnection && (connectionRules ?? []).isEmpty {
            throw rule.fail("ActionParameters", "is required (and must not be empty) with Action EvaluateConnection")
        }
        if action != .evaluateConnection && connectionRules != nil {
            throw rule.fail("ActionParameters", "is only valid with Action EvaluateConnection")
        }
        let servers = try rule.stringArray("DNSServerAddressMatch")
        for (index, server) in (servers ?? []).enumerated() where !IPAddressSyntax.isValid(server) {
            throw rule.fail("DNSServerAddressMatch[\(index)]", "'\(server)' is not an IP address")
        }
        return OnDemandRule(
            action: action,
            interfaceTypeMatch: interface,
            ssidMatch: try rule.stringArray("SSIDMatch"),
            dnsSearchDomainMatch: try rule.stringArray("DNSDomainMatch"),
            dnsServerAddressMatch: servers,
            probeURL: probe,
            connectionRules: connectionRules)
    }

    private static func parseActionParameters(_ parameter: PlistReader) throws(NetExtError) -> EvaluateConnectionRule {
        guard let domains = try parameter.stringArray("Domains"), !domains.isEmpty else {
            throw parameter.fail("Domains", "is required and must not be empty")
        }
        guard let actionText = try parameter.choice("DomainAction", allowed: ["ConnectIfNeeded", "NeverConnect"]) else {
            throw parameter.fail("DomainAction", "is required")
        }
        var probe: URL?
        if let text = try parameter.string("RequiredURLStringProbe") {
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
                throw parameter.fail("RequiredURLStringProbe", "'\(text)' is not an http(s) URL")
            }
            probe = url
        }
        return EvaluateConnectionRule(
            action: actionText == "NeverConnect" ? .neverConnect : .connectIfNeeded,
            matchDomains: domains,
            useDNSServers: try parameter.stringArray("RequiredDNSServers"),
            probeURL: probe)
    }
}
