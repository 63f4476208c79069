import Foundation
import NetExtCore

/// One method of the control protocol: its name on the wire, its parameters (the conforming
/// value itself, encoded as `params`) and the type of its result. The daemon keeps one handler
/// per method (`ControlMethods.all` lists them); a client's `call` returns `Result`, so the
/// request decides what comes back, not the caller.
public protocol ControlMethod: Codable, Sendable, Hashable {
    associatedtype Result: Codable & Sendable
    /// The method name on the wire.
    static var name: String { get }
    /// Whether the method changes state (and so needs root or the admin group).
    static var modifiesState: Bool { get }
}

extension ControlMethod {
    public static var modifiesState: Bool { false }
    /// The method name on the wire.
    public var name: String { Self.name }
}

/// Names a configuration in a request: by its id, or by its name (`localizedDescription`,
/// compared without regard to case). netextd resolves names among the configurations the caller
/// may see, so `netext start NAME` is one request.
public enum ConfigurationReference: Sendable, Hashable, CustomStringConvertible {
    case id(UUID)
    case name(String)

    /// An id when `text` is one, else a name.
    public init(_ text: String) {
        if let id = UUID(uuidString: text) { self = .id(id) } else { self = .name(text) }
    }

    public var description: String {
        switch self {
        case .id(let id): "id \(id)"
        case .name(let name): "'\(name)'"
        }
    }

    /// Reads `id` or `name` from a request's parameters (exactly one of them).
    init(from container: KeyedDecodingContainer<ReferenceKeys>) throws {
        let id = try container.decodeIfPresent(UUID.self, forKey: .id)
        let name = try container.decodeIfPresent(String.self, forKey: .name)
        switch (id, name) {
        case (let id?, nil): self = .id(id)
        case (nil, let name?): self = .name(name)
        default:
            throw DecodingError.dataCorruptedError(forKey: .id, in: container, debugDescription: "give the configuration's id or its name (exactly one)")
        }
    }

    func encode(to container: inout KeyedEncodingContainer<ReferenceKeys>) throws {
        switch self {
        case .id(let id): try container.encode(id, forKey: .id)
        case .name(let name): try container.encode(name, forKey: .name)
        }
    }
}

/// The parameter keys of methods that name a configuration.
enum ReferenceKeys: String, CodingKey { case id, name, options, data }
