import Foundation

/// An issuer's directory (RFC 9578 §4), served at `/.well-known/private-token-issuer-directory`
/// as `application/private-token-issuer-directory`:
/// `{"issuer-request-uri": …, "token-keys": [{"token-type": 2, "token-key": base64url(SPKI), "not-before": seconds}]}`.
public struct IssuerDirectory: Codable, Sendable, Equatable {
    public static let wellKnownPath = "/.well-known/private-token-issuer-directory"
    public static let mediaType = "application/private-token-issuer-directory"

    public struct TokenKey: Codable, Sendable, Equatable {
        public var tokenType: UInt16
        /// base64url of the SubjectPublicKeyInfo (RFC 9578 §6.5).
        public var tokenKey: String
        /// Unix seconds before which clients should not use the key.
        public var notBefore: UInt64?

        enum CodingKeys: String, CodingKey {
            case tokenType = "token-type", tokenKey = "token-key", notBefore = "not-before"
        }

        public init(tokenType: UInt16 = PrivateToken.blindRSAType, publicKeyDER: [UInt8], notBefore: UInt64?) {
            self.tokenType = tokenType
            tokenKey = Base64URL.encode(publicKeyDER)
            self.notBefore = notBefore
        }

        /// The key's DER bytes, or `nil` when `token-key` is not base64url.
        public var publicKeyDER: [UInt8]? { Base64URL.decode(tokenKey) }
    }

    public var issuerRequestURI: String
    public var tokenKeys: [TokenKey]

    enum CodingKeys: String, CodingKey {
        case issuerRequestURI = "issuer-request-uri", tokenKeys = "token-keys"
    }

    public init(issuerRequestURI: String, tokenKeys: [TokenKey]) {
        self.issuerRequestURI = issuerRequestURI
        self.tokenKeys = tokenKeys
    }

    /// Parses a directory; the error names what is wrong.
    public init(decoding bytes: [UInt8]) throws(PrivacyPassError) {
        do { self = try JSONDecoder().decode(IssuerDirectory.self, from: Data(bytes)) } catch {
            throw .malformed(what: "issuer directory", reason: "\(error)")
        }
        for (index, key) in tokenKeys.enumerated() where key.publicKeyDER == nil {
            throw .malformed(what: "issuer directory", reason: "token-keys[\(index)].token-key is not base64url")
        }
    }

    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? [UInt8](encoder.encode(self))) ?? []
    }

    /// The type-2 key a client should use at `now`: the newest whose not-before has passed.
    public func currentKey(now: UInt64) -> [UInt8]? {
        tokenKeys.filter { $0.tokenType == PrivateToken.blindRSAType && ($0.notBefore ?? 0) <= now }
            .max { ($0.notBefore ?? 0) < ($1.notBefore ?? 0) }?.publicKeyDER
    }
}
