/// Errors of Privacy Pass structures and issuance; each names what was wrong.
public enum PrivacyPassError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(what: String, reason: String)
    case unsupportedTokenType(UInt16)
    case wrongKey(expected: UInt8, got: UInt8)
    case cryptographic(String)

    public var description: String {
        switch self {
        case let .malformed(what, reason): "malformed \(what): \(reason)"
        case let .unsupportedTokenType(type): String(format: "token type 0x%04x is not 0x0002 (blind RSA)", type)
        case let .wrongKey(expected, got): "token request names key …\(got), the issuer's is …\(expected)"
        case let .cryptographic(what): "\(what) failed"
        }
    }
}
