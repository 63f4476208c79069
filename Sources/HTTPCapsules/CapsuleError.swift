/// What is wrong with capsules a peer sent; each names the field and the offset in the stream
/// (or in the capsule's value) where it went wrong. Any of them makes the stream malformed: the
/// receiver aborts it (RFC 9297 §3.3; RFC 9484 §4.7).
public enum CapsuleError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A capsule announced a value longer than the receiver accepts.
    case valueTooLong(type: UInt64, length: UInt64, limit: Int, offset: Int)
    /// The stream ended inside a capsule (RFC 9297 §3.3: "an incomplete capsule … MUST be
    /// treated as malformed").
    case truncatedStream(bufferedBytes: Int, offset: Int)
    /// A capsule's value does not follow its type's format.
    case malformedValue(type: UInt64, reason: String, offset: Int)

    public var description: String {
        switch self {
        case let .valueTooLong(type, length, limit, offset):
            "the capsule of type 0x\(String(type, radix: 16)) at stream offset \(offset) announces \(length) bytes, more than the \(limit) accepted"
        case let .truncatedStream(buffered, offset):
            "the stream ended inside a capsule (\(buffered) bytes of it arrived, from stream offset \(offset))"
        case let .malformedValue(type, reason, offset):
            "the capsule of type 0x\(String(type, radix: 16)) is malformed at offset \(offset) of its value: \(reason)"
        }
    }
}
