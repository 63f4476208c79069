import Foundation
import NetExtCore

/// `netext status` and `show` in words: a line per configuration, and for an active tunnel the
/// block `wg show` gives a WireGuard interface (interface, addresses, routes, DNS, endpoint,
/// latest handshake, uptime, transfer).
enum StatusText {
    /// The status as people read it: Apple's `invalid` means, for a stored configuration,
    /// that it is not enabled, so it reads "disabled" (JSON keeps Apple's name).
    static func name(_ status: ConnectionStatus) -> String {
        status == .invalid ? "disabled" : status.rawValue
    }

    /// `NAME: STATUS (last error: …)`.
    static func headline(_ info: StatusInfo) -> String {
        let error = info.lastDisconnectError.map { " (last error: \($0.message))" } ?? ""
        return "\(info.name): \(name(info.status))\(error)"
    }

    /// The labelled lines of an active connection (none for an inactive one).
    static func details(_ info: StatusInfo, now: Date = Date()) -> [(label: String, value: String)] {
        guard info.status.isActive else { return [] }
        var lines: [(String, String)] = []
        if let tunnel = info.tunnel {
            lines.append(("interface", tunnel.mtu > 0 ? "\(tunnel.interface) (mtu \(tunnel.mtu))" : tunnel.interface))
            if !tunnel.addresses.isEmpty { lines.append(("addresses", tunnel.addresses.joined(separator: ", "))) }
            lines.append(("routes", tunnel.routes.isEmpty ? "none" : tunnel.routes.joined(separator: ", ")))
            if !tunnel.dnsServers.isEmpty {
                let scope = tunnel.matchDomains.isEmpty ? "every name" : "only " + tunnel.matchDomains.map { $0.isEmpty ? "(every other name)" : $0 }.joined(separator: ", ")
                lines.append(("dns", "\(tunnel.dnsServers.joined(separator: ", ")) for \(scope)"))
            }
            if !tunnel.searchDomains.isEmpty { lines.append(("search domains", tunnel.searchDomains.joined(separator: ", "))) }
            if let endpoint = tunnel.endpoint { lines.append(("endpoint", endpoint)) }
            if let handshake = tunnel.lastHandshake {
                let rekeys = tunnel.rekeys.map { $0 == 1 ? " (1 rekey)" : " (\($0) rekeys)" } ?? ""
                lines.append(("latest handshake", HumanUnits.ago(now.timeIntervalSince(handshake)) + rekeys))
            }
        }
        if let connected = info.connectedDate { lines.append(("uptime", HumanUnits.duration(now.timeIntervalSince(connected)))) }
        lines.append(("transfer", "\(HumanUnits.bytes(info.bytesIn)) received, \(HumanUnits.bytes(info.bytesOut)) sent"))
        if let proxy = info.proxy { lines.append(("proxy", ProxyEnvironment.summary(proxy))) }
        return lines
    }

    /// The headline and the details indented under it (`  label: value`, as `wg show`).
    static func block(_ info: StatusInfo, now: Date = Date()) -> [String] {
        [headline(info)] + details(info, now: now).map { "  \($0.label): \($0.value)" }
    }
}
