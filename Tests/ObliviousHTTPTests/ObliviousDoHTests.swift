import Crypto
import Foundation
import Testing
@testable import ObliviousHTTP
import NetExtTestSupport

/// RFC 9230 messages against the published Oblivious DoH test vectors (cloudflare/odoh-rs
/// tests/test-vectors.json at release 1.0.4, version 0x0001: its configuration, key seed, key id
/// and two of its transactions, recorded here), then round trips and malformed input.
@Suite("Oblivious DoH (RFC 9230)")
struct ObliviousDoHTests {
    static let configs = "002c000100280020000100010020c6a793bedbd601c25970b1cc46bea80fdb1a8ec51540d79e4f9f17b8baa9da33"
    static let seed = "c9d84d04e6369fccb8a4d5a264001491221f1b97d9b80dd32c35834bb4462383"
    static let keyID = "9265d14d640ff991b31892f36326ab601ea84d61964fc7a9c7f981a5313e58b9"
    struct Transaction {
        var query: String, queryPadding: Int, response: String, responsePadding: Int, obliviousQuery: String, obliviousResponse: String
    }
    static let transactions = [
        Transaction(
            query: "9db1072b0ab473d1e4b74b09637d5f8f253ad4047426ab4dfcc58350bb67b60c", queryPadding: 0,
            response: "9db1072b0ab473d1e4b74b09637d5f8f253ad4047426ab4dfcc58350bb67b60c9db1072b0ab473d1e4b74b09637d5f8f253ad4047426ab4dfcc58350bb67b60c",
            responsePadding: 0,
            obliviousQuery: "0100209265d14d640ff991b31892f36326ab601ea84d61964fc7a9c7f981a5313e58b90054655d2fa2b2271e40b5a78745e41e6d6c5c181fd1fcffcc30fc451d5ec7fdcc5a6ae0da1cba2bd379da93d02d0e42a3849ec6ba53a54c7c8216f0d3cc2cef30ac54f824f5d8b57657d8c7b95e2c0276580b3851d9",
            obliviousResponse: "0200100f474d14998a841b15f84388a8af1881005413556bcd8d86194fb47a51982b715b7f253f4f3ea14d89a5dd9d2b67e6c13b0b7eb7ae740c09d915ef77461956ba8acac5c5f1d8965ca0888b1c0aa2a0084b4c2c375b74e1c3d4e51ad3fe8080b7941fd5719df5"),
        Transaction(
            query: "6537c42600c6a3c6db735f8fb9e8e3618acf7508bb315a8862360c4b18dc83b8", queryPadding: 32,
            response: "6537c42600c6a3c6db735f8fb9e8e3618acf7508bb315a8862360c4b18dc83b86537c42600c6a3c6db735f8fb9e8e3618acf7508bb315a8862360c4b18dc83b8",
            responsePadding: 64,
            obliviousQuery: "0100209265d14d640ff991b31892f36326ab601ea84d61964fc7a9c7f981a5313e58b90074e743c3dcfadd8b146103a69f59544d25eeb7de64772910b4413c94c5716ae94743655e725a6d5e00e29e05fa812108b03d9913450b08b0ab04a7eeec65e13ab52adcfac71b1ea280cbfd9c5865022835addc74f6f71d5c28358b121fae3150470324d4f4ecd0e49b729b74e525bed627e2668aa0",
            obliviousResponse: "0200104463598990890a8bf9051685d6694597009499a1d75c78516db57ef3ffcfddc137ac801acf4a8632a1238ca4b21facded26bc60fe132a1d44725f42fff07b11a10d00760592200c8aebd441a16b4902506c529a11e40af23634645e9d1be643274a5ab65cf4fff9346f9a47cc752b885d242b65ebf62b6ace2ae6d8544cbe64310fcfdb85ad0272b142d6a39de262577bdd6c7b573ccb6e9f194c91e1034b40b57e10700a130"),
    ]

    /// RFC 9180 §7.1.3 DeriveKeyPair for DHKEM(X25519, HKDF-SHA256): the vectors' key comes from a seed.
    static func derivedKey(_ ikm: [UInt8]) throws -> Curve25519.KeyAgreement.PrivateKey {
        let suiteID = Array("KEM".utf8) + [0x00, 0x20]
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: Array("HPKE-v1".utf8) + suiteID + Array("dkp_prk".utf8) + ikm), salt: [UInt8]())
        let info = [0x00, 0x20] + Array("HPKE-v1".utf8) + suiteID + Array("sk".utf8)
        let secret = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: info, outputByteCount: 32)
        return try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: secret.withUnsafeBytes { Array($0) })
    }

    @Test func configurationAndKeyIDMatchTheVectors() throws {
        let configs = try ObliviousDoHConfig.decodeList(try RFCVectors.hex(Self.configs))
        #expect(configs.count == 1)
        #expect(configs[0].keyID == (try RFCVectors.hex(Self.keyID)))
        #expect(ObliviousDoHConfig.encodeList(configs) == (try RFCVectors.hex(Self.configs)))
        let key = ObliviousDoH.TargetKey(privateKey: try Self.derivedKey(try RFCVectors.hex(Self.seed)))
        #expect(key.config == configs[0])
    }

    @Test func targetOpensTheVectorQueriesAndReproducesTheirResponses() throws {
        let key = ObliviousDoH.TargetKey(privateKey: try Self.derivedKey(try RFCVectors.hex(Self.seed)))
        for transaction in Self.transactions {
            let (dns, context) = try ObliviousDoH.openQuery(try RFCVectors.hex(transaction.obliviousQuery), keys: [key])
            #expect(dns == (try RFCVectors.hex(transaction.query)))
            #expect(context.plaintext.count == 4 + dns.count + transaction.queryPadding)
            let expected = try RFCVectors.hex(transaction.obliviousResponse)
            let nonce = try ObliviousDoH.Message(decoding: expected).keyID
            let sealed = try context.sealResponse(try RFCVectors.hex(transaction.response), padding: transaction.responsePadding, responseNonce: nonce)
            #expect(sealed == expected)
        }
    }

    @Test func clientAndTargetRoundTripWithPadding() throws {
        let key = ObliviousDoH.TargetKey(privateKey: Curve25519.KeyAgreement.PrivateKey())
        let query: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0] + [3] + Array("lab".utf8) + [0, 0, 1, 0, 1]
        let (sealed, client) = try ObliviousDoH.sealQuery(query, padding: 40, config: key.config)
        #expect(sealed.count == 1 + 2 + 32 + 2 + 32 + (4 + query.count + 40) + 16)
        let (opened, target) = try ObliviousDoH.openQuery(sealed, keys: [ObliviousDoH.TargetKey(privateKey: Curve25519.KeyAgreement.PrivateKey()), key])
        #expect(opened == query)
        let answer = query + [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1]
        let response = try target.sealResponse(answer, padding: 100)
        #expect(try client.openResponse(response) == answer)
        // Each query has its own context: another client's context cannot open this response.
        let (_, other) = try ObliviousDoH.sealQuery(query, config: key.config)
        #expect(throws: ObliviousHTTPError.decryptionFailed("Oblivious DoH response")) { try other.openResponse(response) }
    }

    @Test func refusesWhatTheRFCRefuses() throws {
        let key = ObliviousDoH.TargetKey(privateKey: Curve25519.KeyAgreement.PrivateKey())
        let query: [UInt8] = Array(repeating: 7, count: 30)
        let (sealed, client) = try ObliviousDoH.sealQuery(query, config: key.config)
        // A key the target does not hold: 401 at the target.
        #expect(throws: ObliviousHTTPError.unknownObliviousDoHKey) {
            try ObliviousDoH.openQuery(sealed, keys: [ObliviousDoH.TargetKey(privateKey: Curve25519.KeyAgreement.PrivateKey())])
        }
        // A flipped ciphertext bit fails authentication.
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(throws: ObliviousHTTPError.decryptionFailed("Oblivious DoH query")) { try ObliviousDoH.openQuery(tampered, keys: [key]) }
        // Bytes after the message, and a response where a query belongs.
        #expect(throws: ObliviousHTTPError.trailingBytes(offset: sealed.count)) { try ObliviousDoH.openQuery(sealed + [0], keys: [key]) }
        let (_, target) = try ObliviousDoH.openQuery(sealed, keys: [key])
        let response = try target.sealResponse(query)
        #expect(throws: ObliviousHTTPError.self) { try ObliviousDoH.openQuery(response, keys: [key]) }
        #expect(throws: ObliviousHTTPError.self) { try client.openResponse(sealed) }
        // Non-zero padding is refused with its offset (§6.1).
        #expect(throws: ObliviousHTTPError.invalidMessage("padding byte at offset 35 is not zero")) {
            try ObliviousDoH.dnsMessage(ofPlaintext: ObliviousDoH.lengthPrefixed(query) + [0, 2, 0, 1])
        }
        // A configuration list: unknown versions and suites are skipped, breaks are refused.
        let good = ObliviousDoHConfig.encodeList([key.config])
        let otherVersion: [UInt8] = [0xff, 0x06, 0, 4, 1, 2, 3, 4]
        let mixed = [UInt8((good.count - 2 + 8) >> 8), UInt8((good.count - 2 + 8) & 0xFF)] + otherVersion + good.dropFirst(2)
        #expect(try ObliviousDoHConfig.decodeList(mixed) == [key.config])
        #expect(throws: ObliviousHTTPError.self) { try ObliviousDoHConfig.decodeList([0, 8] + otherVersion) }
        #expect(throws: ObliviousHTTPError.trailingBytes(offset: good.count)) { try ObliviousDoHConfig.decodeList(good + [0]) }
        #expect(throws: ObliviousHTTPError.truncated(what: "ObliviousDoHConfigs", offset: good.count - 1)) { try ObliviousDoHConfig.decodeList(Array(good.dropLast())) }
    }

    /// Fuzz: truncations, bit flips and random bytes of messages and configuration lists are
    /// refused with a typed error, never a crash, and never open.
    @Test func malformedInputIsRefusedNotCrashedOn() throws {
        var random = SplitMix64(state: 0x0D0B_9230)
        let key = ObliviousDoH.TargetKey(privateKey: Curve25519.KeyAgreement.PrivateKey())
        let (sealed, client) = try ObliviousDoH.sealQuery(Array(repeating: 1, count: 40), padding: 8, config: key.config)
        let (_, target) = try ObliviousDoH.openQuery(sealed, keys: [key])
        let response = try target.sealResponse(Array(repeating: 2, count: 60))
        let list = ObliviousDoHConfig.encodeList([key.config, ObliviousDoHConfig(publicKey: Curve25519.KeyAgreement.PrivateKey().publicKey)])
        var opened = 0
        for round in 0..<3000 {
            for base in [sealed, response, list] {
                var bytes = base
                switch round % 3 {
                case 0: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random)))
                case 1: bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
                default: bytes = (0..<Int.random(in: 0..<200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                }
                if (try? ObliviousDoH.openQuery(bytes, keys: [key])) != nil { opened += 1 }
                if (try? client.openResponse(bytes)) != nil { opened += 1 }
                _ = try? ObliviousDoHConfig.decodeList(bytes)
                _ = try? ObliviousDoH.Message(decoding: bytes)
            }
        }
        #expect(opened == 0)
    }
}
