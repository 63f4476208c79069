import Foundation

/// A request with its identifier, as framed on the wire:
/// `{"id": N, "method": "...", "params": {...}}`. Decoding reads the method name first and
/// decodes `params` straight into that method's type (one pass over the JSON).
public struct RequestEnvelope: Sendable {
    public var id: Int
    public var method: any ControlMethod

    public init(id: Int, method: any ControlMethod) {
        self.id = id
        self.method = method
    }

    /// Whether the request changes state (and so needs root or the admin group).
    public var modifiesState: Bool { type(of: method).modifiesState }
}

extension RequestEnvelope: Codable {
    private enum CodingKeys: String, CodingKey { case id, method, params }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        let name = try container.decode(String.self, forKey: .method)
        guard let type = ControlMethods.all[name] else {
            throw DecodingError.dataCorruptedError(forKey: .method, in: container, debugDescription: "unknown method '\(name)'")
        }
        method = try type.init(from: container.superDecoder(forKey: .params))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(method.name, forKey: .method)
        try method.encode(to: container.superEncoder(forKey: .params))
    }
}

extension RequestEnvelope: Hashable {
    public static func == (lhs: RequestEnvelope, rhs: RequestEnvelope) -> Bool {
        lhs.id == rhs.id && lhs.method.isEqual(to: rhs.method)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(method)
    }
}

extension ControlMethod {
    func isEqual(to other: any ControlMethod) -> Bool {
        (other as? Self) == self
    }
}
