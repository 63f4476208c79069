import Foundation
import NetExtCore

/// A notification pushed to subscribed clients. On the wire: `{"event": "...", "data": {...}}`.
public enum ControlNotification: Sendable, Hashable {
    case configurationChanged(ConfigurationChange)
    case statusChanged(StatusChange)
}

/// A configuration was saved or removed.
public struct ConfigurationChange: Sendable, Hashable, Codable {
    public enum Change: String, Sendable, Hashable, Codable { case saved, removed }
    public var id: UUID
    public var change: Change
    public var name: String
    /// The configuration after the change (nil when removed).
    public var configuration: Configuration?
    public init(id: UUID, change: Change, name: String, configuration: Configuration?) {
        self.id = id
        self.change = change
        self.name = name
        self.configuration = configuration
    }
}

/// A connection moved from one state to another.
public struct StatusChange: Sendable, Hashable, Codable {
    public var previous: ConnectionStatus
    public var current: StatusInfo
    public init(previous: ConnectionStatus, current: StatusInfo) {
        self.previous = previous
        self.current = current
    }
}

/// What the client finds out from a message's top-level keys before decoding the rest.
public struct ServerMessageHeader: Sendable, Decodable {
    public var id: Int?
    public var event: String?
    public var error: NetExtError?
}

/// A successful response: `{"id": N, "result": {...}}`.
public struct ResultEnvelope<Result: Codable & Sendable>: Sendable, Codable {
    public var id: Int
    public var result: Result
    public init(id: Int, result: Result) {
        self.id = id
        self.result = result
    }
}

/// A failed response: `{"id": N, "error": {"code": "...", "message": "..."}}`.
public struct ErrorEnvelope: Sendable, Codable {
    public var id: Int
    public var error: NetExtError
    public init(id: Int, error: NetExtError) {
        self.id = id
        self.error = error
    }
}

/// A notification as framed on the wire.
public struct NotificationEnvelope: Sendable, Codable {
    public var notification: ControlNotification
    public init(_ notification: ControlNotification) { self.notification = notification }

    private enum CodingKeys: String, CodingKey { case event, data }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let event = try container.decode(String.self, forKey: .event)
        switch event {
        case "configurationChanged": notification = .configurationChanged(try container.decode(ConfigurationChange.self, forKey: .data))
        case "statusChanged": notification = .statusChanged(try container.decode(StatusChange.self, forKey: .data))
        default: throw DecodingError.dataCorruptedError(forKey: .event, in: container, debugDescription: "unknown event '\(event)'")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch notification {
        case .configurationChanged(let change):
            try container.encode("configurationChanged", forKey: .event)
            try container.encode(change, forKey: .data)
        case .statusChanged(let change):
            try container.encode("statusChanged", forKey: .event)
            try container.encode(change, forKey: .data)
        }
    }
}
