import VariableLengthIntegers

/// The payload of an HTTP Datagram on a connect-udp or connect-ip stream: a context ID, then
/// the proxied bytes (RFC 9298 §5, RFC 9484 §6):
///
/// ```
/// HTTP Datagram Payload {
///   Context ID (i),
///   Payload (..),
/// }
/// ```
///
/// Context ID 0 carries a whole UDP payload (connect-udp) or a whole IP packet (connect-ip);
/// other IDs belong to extensions, and a receiver that registered none drops them (RFC 9298
/// §4: "… MUST silently drop the datagram").
public struct ProxiedDatagram: Sendable, Hashable {
    /// The context of proxied payloads themselves.
    public static let payloadContext: UInt64 = 0

    public var contextID: UInt64
    public var payload: [UInt8]

    public init(contextID: UInt64 = ProxiedDatagram.payloadContext, payload: [UInt8]) {
        self.contextID = contextID
        self.payload = payload
    }

    /// Reads a DATAGRAM capsule's value (RFC 9297 §3.5: the value is the HTTP Datagram payload).
    public init(datagramCapsuleValue value: [UInt8]) throws(CapsuleError) {
        var offset = 0
        guard let context = QUICVarint.read(value, &offset) else {
            throw .malformedValue(type: Capsule.Kind.datagram.rawValue, reason: "the datagram ends inside its context ID", offset: 0)
        }
        contextID = context
        payload = Array(value[offset...])
    }

    /// Reads a DATAGRAM capsule; fails on a capsule of another type.
    public init(_ capsule: Capsule) throws(CapsuleError) {
        guard capsule.kind == .datagram else {
            throw .malformedValue(type: capsule.type, reason: "not a DATAGRAM capsule (type 0x00)", offset: 0)
        }
        try self.init(datagramCapsuleValue: capsule.value)
    }

    /// The DATAGRAM capsule carrying this datagram.
    public var capsule: Capsule {
        var value: [UInt8] = []
        value.reserveCapacity(QUICVarint.encodedLength(contextID) + payload.count)
        QUICVarint.append(contextID, to: &value)
        value += payload
        return Capsule(.datagram, value: value)
    }

    /// Appends what comes before the payload in the DATAGRAM capsule of a context-0 datagram
    /// whose payload is `payloadLength` bytes (RFC 9297 §3.2 and §3.5: type 0x00, length, context
    /// ID 0): the packet path writes it and then the payload where it lies, without building the
    /// capsule's value apart (``capsule`` is the same bytes).
    public static func appendCapsuleHeader(payloadLength: Int, to bytes: inout [UInt8]) {
        QUICVarint.append(Capsule.Kind.datagram.rawValue, to: &bytes)
        QUICVarint.append(UInt64(QUICVarint.encodedLength(payloadContext) + payloadLength), to: &bytes)
        QUICVarint.append(payloadContext, to: &bytes)
    }
}
