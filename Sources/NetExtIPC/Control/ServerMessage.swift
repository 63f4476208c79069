import Foundation
import NetExtCore

/// A message from netextd as a client reads it: the answer to one of its calls (delivered to
/// that call while decoding, so a reply is decoded once, into the type its method names), or a
/// notification. The calls waiting for answers are found through `ServerFrame.routerKey` in the
/// decoder's `userInfo`.
public enum ServerFrame: Sendable, Decodable {
    /// The answer to call `id`, delivered to it.
    case reply(id: Int)
    /// An answer no call waits for (it timed out, or the id is unknown): dropped.
    case unexpectedReply(id: Int)
    case notification(ControlNotification)

    /// The `userInfo` key under which the decoder finds the client's `ReplyRouting`.
    public static let routerKey = CodingUserInfoKey(rawValue: "netext.replyRouter")!

    private enum CodingKeys: String, CodingKey { case id, result, error, event }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let id = try container.decodeIfPresent(Int.self, forKey: .id) else {
            self = .notification(try NotificationEnvelope(from: decoder).notification)
            return
        }
        guard let router = decoder.userInfo[Self.routerKey] as? any ReplyRouting, let pending = router.takePending(id) else {
            self = .unexpectedReply(id: id)
            return
        }
        self = .reply(id: id)
        // The call is answered exactly once, whatever the frame holds.
        let outcome: Swift.Result<any Decoder, NetExtError>
        do {
            if container.contains(.error) {
                outcome = .failure(try container.decode(NetExtError.self, forKey: .error))
            } else if container.contains(.result) {
                outcome = .success(try container.superDecoder(forKey: .result))
            } else {
                outcome = .failure(NetExtError(.protocolError, "the reply to \(pending.method) has neither a result nor an error"))
            }
        } catch {
            outcome = .failure(NetExtError(.protocolError, "malformed reply to \(pending.method): \(error)"))
        }
        pending.deliver(outcome)
    }
}

/// Finds the call waiting for an answer while a `ServerFrame` is decoded.
public protocol ReplyRouting: Sendable {
    /// Removes and returns the call waiting for reply `id`, if any.
    func takePending(_ id: Int) -> PendingReply?
}

/// A call waiting for its answer.
public struct PendingReply: Sendable {
    /// The method's wire name, for error messages.
    public var method: String
    /// Called once, while the reply is decoded: with a decoder positioned at `result`, or the
    /// error netextd sent (or a description of what was malformed).
    public var deliver: @Sendable (Swift.Result<any Decoder, NetExtError>) -> Void

    public init(method: String, deliver: @escaping @Sendable (Swift.Result<any Decoder, NetExtError>) -> Void) {
        self.method = method
        self.deliver = deliver
    }
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
