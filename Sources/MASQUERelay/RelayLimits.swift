/// What one client may hold of the relay: connections (by source: an IPv4 address or an IPv6
/// /64, as the HTTP roles count them), streams a connection, time to finish its TLS
/// handshake, and time without a stream. Past a connection cap a new connection is closed as soon as it is accepted; past
/// the streams cap HTTP/2 refuses the stream (`SETTINGS_MAX_CONCURRENT_STREAMS`, RFC 9113 §5.1.2).
public struct RelayLimits: Sendable, Hashable {
    /// Connections open at once.
    public var maximumConnections = 1024
    /// Connections one source may hold at once (a NAT's users share one).
    public var maximumConnectionsPerClient = 32
    /// Streams (flows, tunnels) one connection may have open at once.
    public var maximumStreamsPerConnection = 256
    /// Seconds from accept to a finished TLS handshake; then the connection is closed.
    public var handshakeDeadline: Double = 10
    /// Seconds an HTTP/2 connection may stay without an open stream (after its handshake, or
    /// after its last flow ended); then it is sent GOAWAY and closed.
    public var idleDeadline: Double = 120

    public init() {}
}
