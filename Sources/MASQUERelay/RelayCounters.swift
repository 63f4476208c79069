import Synchronization

/// What the relay did, for `/metrics` and tests: streams opened, requests refused and why,
/// datagrams carried and dropped.
public final class RelayCounters: Sendable {
    public struct Values: Sendable, Hashable {
        public var tcpStreams = 0
        public var udpStreams = 0
        /// connect-ip tunnels opened.
        public var ipStreams = 0
        /// 407: no valid credential.
        public var unauthorized = 0
        /// Privacy Pass tokens redeemed (each admits its connection).
        public var privateTokensRedeemed = 0
        /// 403: the target is outside the allowed destinations.
        public var forbidden = 0
        /// 400/405/501 and malformed capsule streams.
        public var malformed = 0
        /// 502: the target has no address or could not be reached; 503: no connect-ip address left.
        public var failed = 0
        public var datagramsToTargets = 0
        /// Datagrams too large for UDP, or for a flow whose socket was gone.
        public var datagramsDropped = 0
        /// Connections closed at accept: the relay or their source was at its cap (`RelayLimits`).
        public var connectionsRefused = 0
        /// Connections closed because their TLS handshake did not finish in time.
        public var handshakesTimedOut = 0
        /// HTTP/2 connections closed after `RelayLimits.idleDeadline` without an open stream.
        public var idleConnectionsClosed = 0
    }

    private let values = Mutex(Values())

    public init() {}

    public var current: Values { values.withLock { $0 } }

    func count(_ field: WritableKeyPath<Values, Int>) {
        values.withLock { $0[keyPath: field] += 1 }
    }
}
