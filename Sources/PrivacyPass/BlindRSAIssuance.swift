import Crypto
import CryptoExtras
import Foundation

/// Publicly verifiable issuance (RFC 9578 §6), client and issuer halves.
public enum BlindRSAIssuance {

    /// TokenRequest (RFC 9578 §6.1): token_type(2) ‖ truncated_token_key_id(1) ‖ blinded_msg(Nk).
    public struct TokenRequest: Sendable, Equatable {
        public var truncatedKeyID: UInt8
        public var blindedMessage: [UInt8]

        public func encoded() -> [UInt8] { PrivateToken.bigEndian(PrivateToken.blindRSAType) + [truncatedKeyID] + blindedMessage }

        public init(truncatedKeyID: UInt8, blindedMessage: [UInt8]) {
            self.truncatedKeyID = truncatedKeyID
            self.blindedMessage = blindedMessage
        }

        public init(decoding bytes: [UInt8]) throws(PrivacyPassError) {
            var reader = ByteReader(bytes, what: "token request")
            let type = try reader.uint16()
            guard type == PrivateToken.blindRSAType else { throw .unsupportedTokenType(type) }
            truncatedKeyID = try reader.uint8()
            blindedMessage = try reader.bytes(PrivateToken.authenticatorLength)
            try reader.finish()
        }
    }

    /// What the client keeps between request and response.
    public struct PendingToken: @unchecked Sendable {
        let key: _RSA.BlindSigning.PublicKey<SHA384>
        let input: [UInt8]
        let nonce: [UInt8]
        let challengeDigest: [UInt8]
        let keyID: [UInt8]
        let blinding: _RSA.BlindSigning.BlindingResult
    }

    /// Client: a token request for `challenge` under the issuer key (SubjectPublicKeyInfo DER).
    public static func makeRequest(challenge: TokenChallenge, issuerKeyDER: [UInt8]) throws(PrivacyPassError) -> (TokenRequest, PendingToken) {
        do {
            let key = try RSAPublicKeyDER.blindSigningKey(issuerKeyDER)
            guard key.keySizeInBits == 2048 else { throw PrivacyPassError.malformed(what: "issuer key", reason: "\(key.keySizeInBits) bits, expected 2048") }
            var generator = SystemRandomNumberGenerator()
            let nonce = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let keyID = PrivateToken.keyID(publicKeyDER: issuerKeyDER)
            let input = PrivateToken.bigEndian(PrivateToken.blindRSAType) + nonce + challenge.digest + keyID
            let blinding = try key.blind(key.prepare(input))
            let request = TokenRequest(truncatedKeyID: keyID[31], blindedMessage: Array(blinding.blindedMessage))
            return (request, PendingToken(key: key, input: input, nonce: nonce, challengeDigest: challenge.digest, keyID: keyID, blinding: blinding))
        } catch let error as PrivacyPassError {
            throw error
        } catch { throw .cryptographic("blinding the token request") }
    }

    /// Client: the token, from the issuer's response (blind_sig, Nk bytes).
    public static func finalize(_ pending: PendingToken, response: [UInt8]) throws(PrivacyPassError) -> PrivateToken {
        guard response.count == PrivateToken.authenticatorLength else {
            throw .malformed(what: "token response", reason: "\(response.count) bytes, expected \(PrivateToken.authenticatorLength)")
        }
        do {
            let signature = try pending.key.finalize(
                _RSA.BlindSigning.BlindSignature(rawRepresentation: response), for: pending.key.prepare(pending.input),
                blindingInverse: pending.blinding.inverse)
            return PrivateToken(tokenType: PrivateToken.blindRSAType, nonce: pending.nonce, challengeDigest: pending.challengeDigest,
                                tokenKeyID: pending.keyID, authenticator: Array(signature.rawRepresentation))
        } catch { throw .cryptographic("finalizing the token (the issuer's signature does not verify)") }
    }

    /// Issuer: the blind signature for a request made against `privateKey`, whose published
    /// SubjectPublicKeyInfo (the bytes token key ids hash) is `publicKeyDER`.
    public static func respond(
        to request: TokenRequest, privateKey: _RSA.BlindSigning.PrivateKey<SHA384>, publicKeyDER: [UInt8]
    ) throws(PrivacyPassError) -> [UInt8] {
        let expected = PrivateToken.keyID(publicKeyDER: publicKeyDER)[31]
        guard request.truncatedKeyID == expected else { throw .wrongKey(expected: expected, got: request.truncatedKeyID) }
        do { return Array(try privateKey.blindSignature(for: request.blindedMessage).rawRepresentation) } catch {
            throw .cryptographic("blind signing")
        }
    }
}
