/// One D-Bus message: the fixed header, the header fields and the body (D-Bus Specification,
/// "Message Format"). NetExt writes little-endian and reads either order.
public struct DBusMessage: Sendable, Hashable {
    /// The message type byte.
    public enum Kind: UInt8, Sendable {
        case methodCall = 1, methodReturn = 2, error = 3, signal = 4
    }

    /// Header flag: the caller wants no answer.
    public static let noReplyExpected: UInt8 = 0x1
    /// Header flag: the caller may wait for the user to authorize the call (polkit).
    public static let allowInteractiveAuthorization: UInt8 = 0x4
    /// The specification's limit on a whole message.
    public static let maximumLength = 128 << 20

    public var kind: Kind
    public var flags: UInt8 = 0
    public var serial: UInt32 = 0
    public var path: String?
    public var interface: String?
    public var member: String?
    public var errorName: String?
    public var replySerial: UInt32?
    public var destination: String?
    public var sender: String?
    public var body: [DBusValue] = []

    public init(kind: Kind) { self.kind = kind }

    /// A method call of `member` on `path` at `destination`.
    public static func methodCall(
        destination: String, path: String, interface: String, member: String, body: [DBusValue] = []
    ) -> DBusMessage {
        var message = DBusMessage(kind: .methodCall)
        message.destination = destination
        message.path = path
        message.interface = interface
        message.member = member
        message.body = body
        return message
    }

    /// The signature of the body.
    public var signature: String { body.map(\.type.signature).joined() }

    /// The first error text a D-Bus error carries (its body's first string), or "".
    public var errorMessage: String { body.first?.stringValue ?? "" }

    /// The header field codes ("Header Fields").
    enum Field: UInt8 {
        case path = 1, interface, member, errorName, replySerial, destination, sender, signature, unixFDs
    }
}
