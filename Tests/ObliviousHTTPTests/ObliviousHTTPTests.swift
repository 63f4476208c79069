import Crypto
import Foundation
import Testing
@testable import ObliviousHTTP
import NetExtTestSupport
import VariableLengthIntegers

@Suite("Binary HTTP and Oblivious HTTP")
struct ObliviousHTTPTests {
    @Test func varintsMatchRFC9000Examples() {
        // RFC 9000 §A.1 sample encodings.
        for (bytes, value) in [([0x25], 37), ([0x7b, 0xbd], 15293), ([0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
                               ([0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652)] as [([UInt8], UInt64)] {
            var offset = 0
            #expect(QUICVarint.read(bytes, &offset) == value && offset == bytes.count)
            var out: [UInt8] = []
            QUICVarint.append(value, to: &out)
            #expect(out == bytes || value == 37)  // 37 is also the shortest form
        }
        var offset = 0
        #expect(QUICVarint.read([0x7b], &offset) == nil)
    }

    @Test func binaryHTTPFromRFC9458AppendixA() throws {
        let vector = try RFCVectors.file("rfc9458-ohttp-appendix-a.json")
        let request = try BinaryHTTPRequest(decoding: try RFCVectors.hex(vector["bhttp_request"]))
        #expect(request == BinaryHTTPRequest(method: "GET", scheme: "https", authority: "example.com", path: "/"))
        #expect(try BinaryHTTPRequest(decoding: request.encoded()) == request)
        let response = try BinaryHTTPResponse(decoding: try RFCVectors.hex(vector["bhttp_response"]))
        #expect(response == BinaryHTTPResponse(status: 200))
        let full = BinaryHTTPRequest(method: "POST", scheme: "https", authority: "pir.example", path: "/queries",
                                     headers: [("content-type", "application/x-protobuf")], content: [1, 2, 3])
        #expect(try BinaryHTTPRequest(decoding: full.encoded() + [0, 0]) == full)
        #expect(throws: ObliviousHTTPError.self) { try BinaryHTTPRequest(decoding: full.encoded() + [7]) }
        #expect(throws: ObliviousHTTPError.self) { try BinaryHTTPRequest(decoding: Array(full.encoded().prefix(9))) }
        #expect(throws: ObliviousHTTPError.unsupportedFraming(2)) { try BinaryHTTPRequest(decoding: [2]) }
    }

    @Test func gatewayReproducesRFC9458AppendixA() throws {
        let vector = try RFCVectors.file("rfc9458-ohttp-appendix-a.json")
        let privateKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: try RFCVectors.hex(vector["skR"]))
        // The example's gateway offers AES-128-GCM (0x0001) and ChaCha20-Poly1305 (0x0003).
        let config = OHTTPKeyConfig(keyID: 1, publicKey: privateKey.publicKey, symmetricAlgorithms: [(1, 1), (1, 3)])
        #expect(config.encoded() == (try RFCVectors.hex(vector["key_config"])))
        #expect(config.offersSupportedSuite)
        #expect(try OHTTPKeyConfig(decoding: config.encoded()) == config)
        let (request, context) = try ObliviousHTTP.decapsulateRequest(
            try RFCVectors.hex(vector["encapsulated_request"]), keyID: 1, privateKey: privateKey)
        #expect(request == (try RFCVectors.hex(vector["bhttp_request"])))
        let response = try context.sealResponse(try RFCVectors.hex(vector["bhttp_response"]), responseNonce: try RFCVectors.hex(vector["response_nonce"]))
        #expect(response == (try RFCVectors.hex(vector["encapsulated_response"])))
    }

    @Test func clientAndGatewayRoundTripAndTamperingFails() throws {
        let privateKey = Curve25519.KeyAgreement.PrivateKey()
        let config = OHTTPKeyConfig(keyID: 7, publicKey: privateKey.publicKey)
        let request = BinaryHTTPRequest(method: "POST", scheme: "https", authority: "pir.example", path: "/queries", content: Array(repeating: 9, count: 300)).encoded()
        let (message, client) = try ObliviousHTTP.encapsulateRequest(request, config: config)
        let (opened, gateway) = try ObliviousHTTP.decapsulateRequest(message, keyID: 7, privateKey: privateKey)
        #expect(opened == request)
        let response = BinaryHTTPResponse(status: 200, headers: [("content-type", "application/x-protobuf")], content: [4, 5]).encoded()
        let sealed = try gateway.sealResponse(response)
        #expect(try client.openResponse(sealed) == response)
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(throws: ObliviousHTTPError.decryptionFailed("response")) { try client.openResponse(tampered) }
        var badRequest = message
        badRequest[50] ^= 1
        #expect(throws: ObliviousHTTPError.decryptionFailed("request")) { try ObliviousHTTP.decapsulateRequest(badRequest, keyID: 7, privateKey: privateKey) }
        #expect(throws: ObliviousHTTPError.unknownKey(id: 7)) { try ObliviousHTTP.decapsulateRequest(message, keyID: 8, privateKey: privateKey) }
        #expect(throws: ObliviousHTTPError.self) { try OHTTPKeyConfig(decoding: Array(config.encoded().dropLast())) }
    }

    @Test func hpkeBaseModeMatchesRFC9180() throws {
        let file = try RFCVectors.file("rfc9180-hpke-base-mode-x25519-p256-hkdfsha256.json")
        let vectors = try #require(file["vectors"] as? [[String: Any]])
        let x25519 = try #require(vectors.first { ($0["kem_id"] as? Int) == 32 && ($0["aead_id"] as? Int) == 1 })
        let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: try RFCVectors.hex(x25519["skRm"]))
        var recipient = try HPKE.Recipient(
            privateKey: key, ciphersuite: HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_128),
            info: Data(try RFCVectors.hex(x25519["info"])), encapsulatedKey: Data(try RFCVectors.hex(x25519["enc"])))
        let encryptions = try #require(x25519["encryptions"] as? [[String: Any]])
        for encryption in encryptions.prefix(4) {
            let plaintext = try recipient.open(Data(try RFCVectors.hex(encryption["ct"])), authenticating: Data(try RFCVectors.hex(encryption["aad"])))
            #expect(Array(plaintext) == (try RFCVectors.hex(encryption["pt"])))
        }
    }

    @Test func randomBytesNeverCrashTheParsers() {
        var state: UInt64 = 42
        for length in 0..<400 {
            let bytes = (0..<(length % 80)).map { _ -> UInt8 in state = state &* 6364136223846793005 &+ 1; return UInt8(truncatingIfNeeded: state >> 33) }
            _ = try? BinaryHTTPRequest(decoding: bytes)
            _ = try? BinaryHTTPResponse(decoding: bytes)
            _ = try? OHTTPKeyConfig(decoding: bytes)
        }
    }
}
