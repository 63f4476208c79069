/// Errors of Binary HTTP and Oblivious HTTP; each names what was wrong and where.
public enum ObliviousHTTPError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(what: String, offset: Int)
    case unsupportedFraming(UInt64)
    case trailingBytes(offset: Int)
    case invalidKeyConfig(String)
    case unknownKey(id: UInt8)
    case unsupportedSuite(kem: UInt16, kdf: UInt16, aead: UInt16)
    case decryptionFailed(String)
    /// An Oblivious DoH message that does not follow RFC 9230 §4 (the reason names the field and offset).
    case invalidMessage(String)
    /// An Oblivious DoH query for a key the target does not hold (RFC 9230 §4.3 and §8: 401).
    case unknownObliviousDoHKey

    public var description: String {
        switch self {
        case let .truncated(what, offset): "message ends inside \(what) at offset \(offset)"
        case let .unsupportedFraming(indicator): "framing indicator \(indicator) is not a known-length request (0) or response (1)"
        case let .trailingBytes(offset): "unexpected non-padding bytes after the message at offset \(offset)"
        case let .invalidKeyConfig(reason): "invalid key configuration: \(reason)"
        case let .unknownKey(id): "no key with id \(id)"
        case let .unsupportedSuite(kem, kdf, aead): String(format: "unsupported suite KEM 0x%04x, KDF 0x%04x, AEAD 0x%04x", kem, kdf, aead)
        case let .decryptionFailed(what): "cannot decrypt the \(what)"
        case let .invalidMessage(reason): "invalid Oblivious DoH message: \(reason)"
        case .unknownObliviousDoHKey: "the query is sealed to a key this target does not hold (its configuration changed: fetch it again)"
        }
    }
}

import Foundation
