import Foundation
import NetExtCore
import NetExtIPC

/// Human-readable descriptions of configurations and events.
enum ConfigurationText {
    static func describe(_ configuration: Configuration, status: StatusInfo) -> String {
        var lines = [
            "name:        \(configuration.localizedDescription)",
            "id:          \(configuration.id.uuidString)",
            "kind:        \(configuration.kind.rawValue)",
            "owner:       \(configuration.owner)",
            "enabled:     \(configuration.isEnabled ? "yes" : "no")",
            "status:      \(StatusText.name(status.status))",
            "revision:    \(configuration.revision)",
        ]
        if let connected = status.connectedDate { lines.append("connected:   since \(ISO8601DateFormatter().string(from: connected))") }
        // An active connection in the detail `netext status` gives it.
        lines += StatusText.details(status).map { "\($0.label): \($0.value)" }
        if let error = status.lastDisconnectError { lines.append("last error:  \(error)") }
        if let profile = configuration.profileIdentifier { lines.append("profile:     \(profile)") }
        switch configuration.protocolConfiguration {
        case .tunnelProvider(let settings):
            lines.append("provider:    \(settings.providerBundleIdentifier) (\(settings.providerType.rawValue))")
            lines.append("server:      \(settings.serverAddress)")
            if let username = settings.username { lines.append("username:    \(username)") }
            lines.append("password:    \(settings.passwordReference == nil ? "none" : "stored")")
            if let uuid = settings.perAppUUID {
                lines.append("per-app:     VPNUUID \(uuid); carries only its apps")
                lines.append("apps:        " + (settings.appRules.isEmpty ? "none bound (netext app bind APP --vpn NAME)" : Self.apps(settings.appRules)))
            }
            if !settings.excludedAppRules.isEmpty { lines.append("bypassed by: " + Self.apps(settings.excludedAppRules)) }
            let guards = [settings.includeAllNetworks ? "include all networks (kill switch)" : nil,
                          settings.excludeLocalNetworks ? "exclude local networks" : nil,
                          settings.enforceRoutes ? "enforce routes" : nil].compactMap { $0 }
            if !guards.isEmpty { lines.append("routing:     " + guards.joined(separator: ", ")) }
            if !settings.providerConfiguration.isEmpty {
                let keys = settings.providerConfiguration.keys.sorted().joined(separator: ", ")
                lines.append("provider configuration keys: \(keys)")
            }
        case .personalVPN(let settings):
            lines.append("IKEv2 server: \(settings.serverAddress)")
            let extended = settings.useExtendedAuthentication ? " + EAP-MSCHAPv2 as \(settings.username ?? "?")" : ""
            lines.append("authentication: \(settings.authenticationMethod.rawValue)\(extended)")
            lines.append("identities:  local \(settings.localIdentifier ?? "(its address)"), remote \(settings.remoteIdentifier ?? settings.serverAddress)")
        case .relay(let settings):
            lines += RelayText.describe(settings)
        default:
            break
        }
        lines.append("on demand:   \(configuration.isOnDemandEnabled ? "enabled" : "disabled"), \(configuration.onDemandRules.count) rule(s)")
        for (index, rule) in configuration.onDemandRules.enumerated() {
            lines.append("  \(index + 1). \(describe(rule))")
        }
        return lines.joined(separator: "\n")
    }

    static func describe(_ rule: OnDemandRule) -> String {
        var parts = [rule.action.rawValue, "interface \(rule.interfaceTypeMatch.rawValue)"]
        if let ssids = rule.ssidMatch { parts.append("SSID in [\(ssids.joined(separator: ", "))]") }
        if let domains = rule.dnsSearchDomainMatch { parts.append("search domain in [\(domains.joined(separator: ", "))]") }
        if let servers = rule.dnsServerAddressMatch { parts.append("DNS server in [\(servers.joined(separator: ", "))]") }
        if let probe = rule.probeURL { parts.append("probe \(probe.absoluteString)") }
        for connectionRule in rule.connectionRules ?? [] {
            parts.append("\(connectionRule.action.rawValue) for [\(connectionRule.matchDomains.joined(separator: ", "))]")
        }
        return parts.joined(separator: ", ")
    }

    static func describe(_ notification: ControlNotification) -> String {
        let time = ISO8601DateFormatter().string(from: Date())
        switch notification {
        case .configurationChanged(let change):
            let revision = change.configuration.map { " (revision \($0.revision), \($0.isEnabled ? "enabled" : "disabled"))" } ?? ""
            return "\(time) configuration \(change.change.rawValue): \(change.name)\(revision)"
        case .statusChanged(let change):
            let error = change.current.lastDisconnectError.map { " — \($0.message)" } ?? ""
            return "\(time) status \(change.current.name): \(StatusText.name(change.previous)) -> \(StatusText.name(change.current.status))\(error)"
        }
    }

    /// App rules as `netext show` lists them: identifiers, with a path or unit patterns if any.
    static func apps(_ rules: [AppRule]) -> String {
        rules.map { rule in
            var extra: [String] = []
            if let path = rule.matchPath { extra.append(path) }
            extra += rule.matchUnits.map(\.pattern)
            extra += rule.matchDomains.map { "domain " + $0 }
            return rule.matchSigningIdentifier.rawValue + (extra.isEmpty ? "" : " (" + extra.joined(separator: ", ") + ")")
        }.joined(separator: ", ")
    }
}
