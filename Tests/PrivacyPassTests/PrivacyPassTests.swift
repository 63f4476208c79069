import Crypto
import CryptoExtras
import Foundation
import NetExtTestSupport
import Testing
@testable import PrivacyPass

@Suite("Privacy Pass")
struct PrivacyPassTests {
    @Test func challengeAndAuthenticatorInputMatchRFC9577() throws {
        var checked = 0
        for vector in try RFCVectors.list("rfc9577-privacypass-challenge-redemption-structure.json") where vector["issuer_name"] != nil {
            checked += 1
            let type = UInt16(try RFCVectors.hex(vector["token_type"]).reduce(0) { $0 << 8 | Int($1) })
            let originBytes = try RFCVectors.hex(vector["origin_info"])
            let origins = originBytes.isEmpty ? [] : String(decoding: originBytes, as: UTF8.self).split(separator: ",").map(String.init)
            let challenge = TokenChallenge(
                tokenType: type, issuerName: String(decoding: try RFCVectors.hex(vector["issuer_name"]), as: UTF8.self),
                redemptionContext: try RFCVectors.hex(vector["redemption_context"]), originInfo: origins)
            #expect(try TokenChallenge(decoding: challenge.encoded()) == challenge)
            let input = PrivateToken.bigEndian(type) + (try RFCVectors.hex(vector["nonce"])) + challenge.digest + (try RFCVectors.hex(vector["token_key_id"]))
            #expect(input == (try RFCVectors.hex(vector["token_authenticator_input"])), "vector \(vector["test_vector"] ?? "?")")
        }
        #expect(checked == 5)
    }

    @Test func issuerAndOriginMatchRFC9578() throws {
        for vector in try RFCVectors.list("rfc9578-privacypass-type2-blindrsa-issuance.json") {
            let pem = String(decoding: try RFCVectors.hex(vector["skS"]), as: UTF8.self)
            let privateKey = try _RSA.BlindSigning.PrivateKey<SHA384>(pemRepresentation: pem, parameters: .RSABSSA_SHA384_PSS_Deterministic)
            let publicKeyDER = try RFCVectors.hex(vector["pkS"])
            let request = try BlindRSAIssuance.TokenRequest(decoding: try RFCVectors.hex(vector["token_request"]))
            #expect(request.truncatedKeyID == PrivateToken.keyID(publicKeyDER: publicKeyDER)[31])
            // Blind RSA signing is deterministic: the issuer reproduces the vector's response.
            #expect(try BlindRSAIssuance.respond(to: request, privateKey: privateKey, publicKeyDER: publicKeyDER) == (try RFCVectors.hex(vector["token_response"])))
            let challenge = try TokenChallenge(decoding: try RFCVectors.hex(vector["token_challenge"]))
            let token = try PrivateToken(decoding: try RFCVectors.hex(vector["token"]))
            #expect(token.nonce == (try RFCVectors.hex(vector["nonce"])))
            #expect(token.challengeDigest == challenge.digest)
            #expect(token.verify(publicKeyDER: publicKeyDER, challenge: challenge))
            var forged = token
            forged.nonce[0] ^= 1
            #expect(!forged.verify(publicKeyDER: publicKeyDER, challenge: challenge))
        }
    }

    @Test func clientIssuerOriginRoundTrip() throws {
        let vector = try #require(try RFCVectors.list("rfc9578-privacypass-type2-blindrsa-issuance.json").first)
        let privateKey = try _RSA.BlindSigning.PrivateKey<SHA384>(
            pemRepresentation: String(decoding: try RFCVectors.hex(vector["skS"]), as: UTF8.self), parameters: .RSABSSA_SHA384_PSS_Deterministic)
        let publicKeyDER = try RFCVectors.hex(vector["pkS"])
        let challenge = TokenChallenge(issuerName: "issuer.example", originInfo: ["pir.example"])
        let (request, pending) = try BlindRSAIssuance.makeRequest(challenge: challenge, issuerKeyDER: publicKeyDER)
        let wire = try BlindRSAIssuance.TokenRequest(decoding: request.encoded())
        let token = try BlindRSAIssuance.finalize(pending, response: try BlindRSAIssuance.respond(to: wire, privateKey: privateKey, publicKeyDER: publicKeyDER))
        #expect(try PrivateToken(decoding: token.encoded()) == token)
        #expect(token.verify(publicKeyDER: publicKeyDER, challenge: challenge))
        #expect(!token.verify(publicKeyDER: publicKeyDER, challenge: TokenChallenge(issuerName: "issuer.example", originInfo: ["other.example"])))
        #expect(throws: PrivacyPassError.self) { try BlindRSAIssuance.finalize(pending, response: [UInt8](repeating: 1, count: 256)) }
        var wrongKey = wire
        wrongKey.truncatedKeyID &+= 1
        #expect(throws: PrivacyPassError.self) { try BlindRSAIssuance.respond(to: wrongKey, privateKey: privateKey, publicKeyDER: publicKeyDER) }
    }

    @Test func malformedStructuresNameTheProblem() {
        #expect(throws: PrivacyPassError.self) { try TokenChallenge(decoding: [0, 2, 0, 0, 0, 0, 0]) }  // empty issuer
        #expect(throws: PrivacyPassError.self) { try TokenChallenge(decoding: [0, 2, 0, 1, 0x61, 5, 1, 2, 3, 4, 5, 0, 0]) }  // 5-byte context
        #expect(throws: PrivacyPassError.unsupportedTokenType(1)) { try PrivateToken(decoding: [0, 1] + [UInt8](repeating: 0, count: 352)) }
        #expect(throws: PrivacyPassError.self) { try PrivateToken(decoding: [0, 2] + [UInt8](repeating: 0, count: 351)) }
        var state: UInt64 = 9
        for length in 0..<300 {
            let bytes = (0..<(length % 70)).map { _ -> UInt8 in state = state &* 6364136223846793005 &+ 1; return UInt8(truncatingIfNeeded: state >> 33) }
            _ = try? TokenChallenge(decoding: bytes)
            _ = try? PrivateToken(decoding: bytes)
            _ = try? BlindRSAIssuance.TokenRequest(decoding: bytes)
        }
    }
}
