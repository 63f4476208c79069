import Synchronization

/// What clients may hold of an HTTP role's server (issue 26, item 6): connections, request
/// bodies buffered in memory, and time.
public struct HTTPServerLimits: Sendable {
    /// Connections open at once; more are closed as soon as they are accepted.
    public var maximumConnections = 1024
    /// Request body bytes buffered across all connections; a request that would pass it is
    /// answered 503 and its connection closed.
    public var bufferedBodyBudget = 128 << 20
    /// Seconds a connection has, from accept or from the end of its previous response, to
    /// deliver a whole request (head and body); then it is closed. Covers idle keep-alive
    /// connections, slowly sent heads (slowloris) and slowly sent bodies.
    public var requestDeadline: Double = 30

    public init() {}
}

/// The counters every connection of one server shares.
final class HTTPServerUsage: Sendable {
    let limits: HTTPServerLimits
    private let connections = Atomic(0)
    private let bufferedBytes = Atomic(0)

    init(limits: HTTPServerLimits) {
        self.limits = limits
    }

    /// Counts a new connection; `false` (not counted) when the server is full.
    func openConnection() -> Bool {
        let now = connections.wrappingAdd(1, ordering: .relaxed).newValue
        guard now <= limits.maximumConnections else {
            connections.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func closeConnection() { connections.wrappingSubtract(1, ordering: .relaxed) }

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

    var openConnections: Int { connections.load(ordering: .relaxed) }
    var buffered: Int { bufferedBytes.load(ordering: .relaxed) }
}
