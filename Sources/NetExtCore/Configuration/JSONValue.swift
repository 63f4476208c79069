import Foundation

/// A JSON value: the type of free-form dictionaries such as a tunnel provider's
/// `providerConfiguration` (Apple's `[String: Any]`), kept Codable and Sendable.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The string payload, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number payload, if this is a number.
    public var numberValue: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The boolean payload, if this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
}

extension JSONValue {
    /// Converts a property-list value (as produced by `PropertyListSerialization`) to JSON.
    /// Dates become ISO 8601 strings and data becomes base64, since JSON has neither.
    public init?(propertyList value: Any) {
        switch value {
        case let value as String: self = .string(value)
        case let value as Bool where PlistValueKind(value) == .boolean: self = .bool(value)
        case let value as NSNumber: self = .number(value.doubleValue)
        case let value as Int: self = .number(Double(value))
        case let value as Double: self = .number(value)
        case let value as Date: self = .string(ISO8601DateFormatter().string(from: value))
        case let value as Data: self = .string(value.base64EncodedString())
        case let value as [Any]:
            var items: [JSONValue] = []
            for item in value {
                guard let converted = JSONValue(propertyList: item) else { return nil }
                items.append(converted)
            }
            self = .array(items)
        case let value as [String: Any]:
            var items: [String: JSONValue] = [:]
            for (key, item) in value {
                guard let converted = JSONValue(propertyList: item) else { return nil }
                items[key] = converted
            }
            self = .object(items)
        default:
            return nil
        }
    }
}

