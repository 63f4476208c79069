import NetExtCore
import NIOCore
import Synchronization

/// What clients may hold of an HTTP role's server (issue 26, item 6): connections, request
/// bodies buffered in memory, and time.
public struct HTTPServerLimits: Sendable {
    /// Connections open at once; more are closed as soon as they are accepted.
    public var maximumConnections = 1024
    /// Connections one source (an IPv4 address or an IPv6 /64) may hold at once, so one client
    /// cannot take every connection; more are closed as soon as they are accepted. A role whose
    /// clients all arrive through one peer (a gateway behind a relay, a PIR server behind a
    /// gateway) may need it as high as `maximumConnections`.
    public var maximumConnectionsPerSource = 256
    /// Request body bytes buffered across all connections; a request that would pass it is
    /// answered 503 and its connection closed.
    public var bufferedBodyBudget = 128 << 20
    /// Seconds a connection has, from accept or from the end of its previous response, to
    /// deliver a whole request (head and body); then it is closed. Covers idle keep-alive
    /// connections, slowly sent heads (slowloris) and slowly sent bodies.
    public var requestDeadline: Double = 30
    /// Seconds a shutdown waits for requests being answered (and HTTP/2 clients told to go
    /// away) before it closes what is still open.
    public var drainDeadline: Double = 10

    public init() {}
}

/// The counters every connection of one server shares (the MASQUE relay's connections too).
package final class HTTPServerUsage: Sendable {
    package let limits: HTTPServerLimits
    private let connections = Atomic(0)
    private let bufferedBytes = Atomic(0)
    /// Open connections by source; a source with none has no entry, so the table never holds
    /// more than `maximumConnections` entries.
    private let bySource = Mutex<[SourceKey: Int]>([:])

    package init(limits: HTTPServerLimits) {
        self.limits = limits
    }

    /// Counts a new connection from `source` (nil: a peer without an IP address); `false` (not
    /// counted) when the server or that source is at its limit.
    package func openConnection(from source: SourceKey?) -> Bool {
        let now = connections.wrappingAdd(1, ordering: .relaxed).newValue
        guard now <= limits.maximumConnections else {
            connections.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        guard let source else { return true }
        let admitted = bySource.withLock { table in
            let held = table[source, default: 0]
            guard held < limits.maximumConnectionsPerSource else { return false }
            table[source] = held + 1
            return true
        }
        if !admitted { connections.wrappingSubtract(1, ordering: .relaxed) }
        return admitted
    }

    /// Uncounts a connection `openConnection(from:)` admitted.
    package func closeConnection(from source: SourceKey?) {
        connections.wrappingSubtract(1, ordering: .relaxed)
        guard let source else { return }
        bySource.withLock { table in
            let held = table[source, default: 0] - 1
            table[source] = held > 0 ? held : nil
        }
    }

    /// Reserves `count` body bytes; `false` (nothing reserved) past the budget.
    func reserve(_ count: Int) -> Bool {
        let now = bufferedBytes.wrappingAdd(count, ordering: .relaxed).newValue
        guard now <= limits.bufferedBodyBudget else {
            bufferedBytes.wrappingSubtract(count, ordering: .relaxed)
            return false
        }
        return true
    }

    func release(_ count: Int) {
        if count > 0 { bufferedBytes.wrappingSubtract(count, ordering: .relaxed) }
    }

    package var openConnections: Int { connections.load(ordering: .relaxed) }

    /// The per-source key of an IP peer; nil for a Unix socket.
    package static func sourceKey(of address: SocketAddress) -> SourceKey? {
        switch address {
        case let .v4(peer): withUnsafeBytes(of: peer.address.sin_addr) { SourceKey(address: $0) }
        case let .v6(peer): withUnsafeBytes(of: peer.address.sin6_addr) { SourceKey(address: $0) }
        case .unixDomainSocket: nil
        }
    }
    var buffered: Int { bufferedBytes.load(ordering: .relaxed) }
}
