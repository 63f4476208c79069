import Crypto
import CryptoExtras
import Foundation

/// A redeemed token (RFC 9577 §2.2): token_type(2) ‖ nonce(32) ‖ challenge_digest(32) ‖
/// token_key_id(32) ‖ authenticator(Nk), for the publicly verifiable type 0x0002 (RFC 9578 §6:
/// blind RSA, RSABSSA-SHA384-PSS-Deterministic, 2048-bit keys, Nk = 256).
public struct PrivateToken: Sendable, Equatable {
    public static let blindRSAType: UInt16 = 0x0002
    public static let authenticatorLength = 256

    public var tokenType: UInt16
    public var nonce: [UInt8]
    public var challengeDigest: [UInt8]
    public var tokenKeyID: [UInt8]
    public var authenticator: [UInt8]

    /// The bytes the issuer's signature covers.
    public var authenticatorInput: [UInt8] {
        Self.bigEndian(tokenType) + nonce + challengeDigest + tokenKeyID
    }

    public func encoded() -> [UInt8] { authenticatorInput + authenticator }

    public init(tokenType: UInt16, nonce: [UInt8], challengeDigest: [UInt8], tokenKeyID: [UInt8], authenticator: [UInt8]) {
        self.tokenType = tokenType
        self.nonce = nonce
        self.challengeDigest = challengeDigest
        self.tokenKeyID = tokenKeyID
        self.authenticator = authenticator
    }

    public init(decoding bytes: [UInt8]) throws(PrivacyPassError) {
        var reader = ByteReader(bytes, what: "token")
        tokenType = try reader.uint16()
        guard tokenType == Self.blindRSAType else { throw .unsupportedTokenType(tokenType) }
        nonce = try reader.bytes(32)
        challengeDigest = try reader.bytes(32)
        tokenKeyID = try reader.bytes(32)
        authenticator = try reader.bytes(Self.authenticatorLength)
        try reader.finish()
    }

    /// token_key_id = SHA-256 of the issuer's public key as SubjectPublicKeyInfo DER (RFC 9578 §6.5).
    public static func keyID(publicKeyDER: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: publicKeyDER)) }

    /// The origin's check: the authenticator is the issuer's RSASSA-PSS signature over the input,
    /// and the token was made for `challenge` (any challenge when it is nil: Apple's
    /// pir-service-example checks no challenge, its clients making their own ahead of time).
    public func verify(publicKeyDER: [UInt8], challenge: TokenChallenge?) -> Bool {
        guard tokenType == Self.blindRSAType, challenge.map({ challengeDigest == $0.digest }) ?? true,
              tokenKeyID == Self.keyID(publicKeyDER: publicKeyDER),
              let key = try? RSAPublicKeyDER.blindSigningKey(publicKeyDER)
        else { return false }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: authenticator)
        return key.isValidSignature(signature, for: key.prepare(authenticatorInput))
    }

    static func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
}
