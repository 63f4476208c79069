import Foundation
import NetExtCore
import NetExtIPC

/// One handler per control method, keyed by its wire name. A handler gets the decoded method
/// (its own type) and returns that method's result type; the table encodes the reply once.
struct ControlDispatchTable<Service: Sendable>: Sendable {
    typealias Handler = @Sendable (Service, any ControlMethod, ClientIdentity, Int) async throws -> Data

    private var handlers: [String: Handler] = [:]

    /// Registers the handler of `Method`.
    mutating func on<Method: ControlMethod>(
        _: Method.Type, _ handle: @escaping @Sendable (Service, Method, ClientIdentity) async throws -> Method.Result
    ) {
        precondition(handlers[Method.name] == nil, "two handlers for \(Method.name)")
        handlers[Method.name] = { service, method, identity, id in
            guard let method = method as? Method else {
                throw NetExtError(.protocolError, "\(Method.name) arrived with another method's parameters")
            }
            return try ControlProtocol.payload(ResultEnvelope(id: id, result: try await handle(service, method, identity)))
        }
    }

    /// The handler of the method named `name`, if any.
    func handler(for name: String) -> Handler? { handlers[name] }

    /// The names of the methods with a handler.
    var methodNames: Set<String> { Set(handlers.keys) }
}
