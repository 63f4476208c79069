import VariableLengthIntegers

/// One HTTP capsule (RFC 9297 §3.2): a type, and a value of known length. On an HTTP/2 stream
/// that upgraded to a capsule protocol (extended CONNECT with `capsule-protocol: ?1`), the DATA
/// frames carry a sequence of these:
///
/// ```
/// Capsule {
///   Capsule Type (i),
///   Capsule Length (i),
///   Capsule Value (..),
/// }
/// ```
public struct Capsule: Sendable, Hashable {
    /// The capsule types this module knows (IANA "HTTP Capsule Types"). A receiver drops a
    /// capsule of any other type silently (RFC 9297 §3.2).
    public enum Kind: UInt64, Sendable, CaseIterable {
        /// DATAGRAM (RFC 9297 §3.5): one HTTP Datagram.
        case datagram = 0x00
        /// ADDRESS_ASSIGN (RFC 9484 §4.7.1).
        case addressAssign = 0x01
        /// ADDRESS_REQUEST (RFC 9484 §4.7.2).
        case addressRequest = 0x02
        /// ROUTE_ADVERTISEMENT (RFC 9484 §4.7.3).
        case routeAdvertisement = 0x03
    }

    public var type: UInt64
    public var value: [UInt8]

    public init(type: UInt64, value: [UInt8]) {
        self.type = type
        self.value = value
    }

    public init(_ kind: Kind, value: [UInt8]) {
        self.init(type: kind.rawValue, value: value)
    }

    /// The known type, nil for one this module does not know.
    public var kind: Kind? { Kind(rawValue: type) }

    /// How many bytes the capsule takes on the wire.
    public var encodedLength: Int {
        QUICVarint.encodedLength(type) + QUICVarint.encodedLength(UInt64(value.count)) + value.count
    }

    /// Appends the capsule's wire form to `out`.
    public func encode(into out: inout [UInt8]) {
        QUICVarint.append(type, to: &out)
        QUICVarint.append(UInt64(value.count), to: &out)
        out += value
    }

    /// The capsule's wire form.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedLength)
        encode(into: &out)
        return out
    }
}
