/// Errors of Binary HTTP and Oblivious HTTP; each names what was wrong and where.
public enum ObliviousHTTPError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(what: String, offset: Int)
    case unsupportedFraming(UInt64)
    case trailingBytes(offset: Int)
    case invalidKeyConfig(String)
    case unknownKey(id: UInt8)
    case unsupportedSuite(kem: UInt16, kdf: UInt16, aead: UInt16)
    case decryptionFailed(String)

    public var description: String {
        switch self {
        case let .truncated(what, offset): "message ends inside \(what) at offset \(offset)"
        case let .unsupportedFraming(indicator): "framing indicator \(indicator) is not a known-length request (0) or response (1)"
        case let .trailingBytes(offset): "unexpected non-padding bytes after the message at offset \(offset)"
        case let .invalidKeyConfig(reason): "invalid key configuration: \(reason)"
        case let .unknownKey(id): "no key with id \(id)"
        case let .unsupportedSuite(kem, kdf, aead): String(format: "unsupported suite KEM 0x%04x, KDF 0x%04x, AEAD 0x%04x", kem, kdf, aead)
        case let .decryptionFailed(what): "cannot decrypt the \(what)"
        }
    }
}

import Foundation
