import Foundation

/// A configuration's connection state (result of `getStatus`, and the payload of `statusChanged`).
public struct StatusInfo: Sendable, Hashable, Codable {
    public var id: UUID
    public var name: String
    public var kind: ConfigurationKind
    public var isEnabled: Bool
    public var status: ConnectionStatus
    public var connectedDate: Date?
    /// Why the last connection ended, if it ended with an error.
    public var lastDisconnectError: NetExtError?
    public var bytesIn: UInt64
    public var bytesOut: UInt64
    /// The HTTP/HTTPS proxies the connected tunnel set, if any (`netext proxy-env` exports them).
    public var proxy: ProxySettings?
    /// True when the configuration includes all networks and is enabled: its kill switch keeps
    /// traffic blocked whenever the tunnel is not connected (absent: false).
    public var killSwitch: Bool?
    /// An active tunnel in detail (interface, addresses, routes, DNS, endpoint, handshakes); nil
    /// while it has no network settings, and for configurations that are not tunnels.
    public var tunnel: TunnelDetails?

    public init(id: UUID, name: String, kind: ConfigurationKind, isEnabled: Bool, status: ConnectionStatus, connectedDate: Date? = nil, lastDisconnectError: NetExtError? = nil, bytesIn: UInt64 = 0, bytesOut: UInt64 = 0, proxy: ProxySettings? = nil, killSwitch: Bool? = nil, tunnel: TunnelDetails? = nil) {
        self.killSwitch = killSwitch
        self.tunnel = tunnel
        self.id = id
        self.name = name
        self.kind = kind
        self.isEnabled = isEnabled
        self.status = status
        self.connectedDate = connectedDate
        self.lastDisconnectError = lastDisconnectError
        self.bytesIn = bytesIn
        self.bytesOut = bytesOut
        self.proxy = proxy
    }
}
