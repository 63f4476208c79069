import Foundation
import NetExtCore
import NetExtIPC

/// Human-readable descriptions of configurations and events.
enum ConfigurationText {
    /// "in 1.2 MB, out 340 kB" (decimal units, as network tools count).
    static func trafficSummary(_ status: StatusInfo) -> String {
        "in \(byteCount(status.bytesIn)), out \(byteCount(status.bytesOut))"
    }

    static func byteCount(_ bytes: UInt64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    static func describe(_ configuration: Configuration, status: StatusInfo) -> String {
        var lines = [
            "name:        \(configuration.localizedDescription)",
            "id:          \(configuration.id.uuidString)",
            "kind:        \(configuration.kind.rawValue)",
            "owner:       \(configuration.owner)",
            "enabled:     \(configuration.isEnabled ? "yes" : "no")",
            "status:      \(status.status.rawValue)",
            "revision:    \(configuration.revision)",
        ]
        if let connected = status.connectedDate { lines.append("connected:   since \(ISO8601DateFormatter().string(from: connected))") }
        if status.status.isActive { lines.append("traffic:     \(trafficSummary(status))") }
        if let error = status.lastDisconnectError { lines.append("last error:  \(error)") }
        if let profile = configuration.profileIdentifier { lines.append("profile:     \(profile)") }
        switch configuration.protocolConfiguration {
        case .tunnelProvider(let settings):
            lines.append("provider:    \(settings.providerBundleIdentifier) (\(settings.providerType.rawValue))")
            lines.append("server:      \(settings.serverAddress)")
            if let username = settings.username { lines.append("username:    \(username)") }
            lines.append("password:    \(settings.passwordReference == nil ? "none" : "stored")")
            if let uuid = settings.perAppUUID { lines.append("per-app:     VPNUUID \(uuid)") }
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
            return "\(time) status \(change.current.name): \(change.previous.rawValue) -> \(change.current.status.rawValue)\(error)"
        }
    }
}
