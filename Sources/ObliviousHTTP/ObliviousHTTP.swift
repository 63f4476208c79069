import Crypto
import Foundation

/// Oblivious HTTP message encapsulation (RFC 9458 §4), suite DHKEM(X25519, HKDF-SHA256),
/// HKDF-SHA256, AES-128-GCM, on swift-crypto's HPKE.
public enum ObliviousHTTP {
    static let requestLabel = Array("message/bhttp request".utf8)
    static let responseLabel = Array("message/bhttp response".utf8)
    static let suite = HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_128)
    /// Nk and Nn of AES-128-GCM; the response nonce is max(Nn, Nk) bytes (§4.4).
    static let keyLength = 16, nonceLength = 12, responseNonceLength = 16

    /// hdr = key_id ‖ kem_id ‖ kdf_id ‖ aead_id (§4.3).
    static func header(keyID: UInt8) -> [UInt8] {
        [keyID, 0x00, 0x20, 0x00, 0x01, 0x00, 0x01]
    }

    /// The client side of one exchange: encapsulate a request, then open its response.
    public struct ClientContext: Sendable {
        let sender: HPKE.Sender
        let encapsulatedKey: [UInt8]

        /// The response for the request this context sent (§4.4).
        public func openResponse(_ message: [UInt8]) throws(ObliviousHTTPError) -> [UInt8] {
            guard message.count >= ObliviousHTTP.responseNonceLength + 16 else { throw .truncated(what: "encapsulated response", offset: message.count) }
            let nonce = Array(message.prefix(ObliviousHTTP.responseNonceLength))
            let (key, aeadNonce): (SymmetricKey, [UInt8])
            do {
                let secret = try sender.exportSecret(context: ObliviousHTTP.responseLabel, outputByteCount: ObliviousHTTP.responseNonceLength)
                (key, aeadNonce) = ObliviousHTTP.responseKeys(secret: secret, encapsulatedKey: encapsulatedKey, responseNonce: nonce)
                let box = try AES.GCM.SealedBox(combined: Data(aeadNonce) + Data(message[ObliviousHTTP.responseNonceLength...]))
                return Array(try AES.GCM.open(box, using: key))
            } catch { throw .decryptionFailed("response") }
        }
    }

    /// Encapsulates a Binary HTTP request for the gateway's key configuration (§4.3):
    /// hdr ‖ enc ‖ ct with info = "message/bhttp request" ‖ 0x00 ‖ hdr.
    public static func encapsulateRequest(_ request: [UInt8], config: OHTTPKeyConfig) throws(ObliviousHTTPError) -> (message: [UInt8], context: ClientContext) {
        guard config.offersSupportedSuite else { throw .unsupportedSuite(kem: config.kemID, kdf: config.symmetricAlgorithms.first?.kdf ?? 0, aead: config.symmetricAlgorithms.first?.aead ?? 0) }
        let hdr = header(keyID: config.keyID)
        do {
            let recipient = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: config.publicKey)
            var sender = try HPKE.Sender(recipientKey: recipient, ciphersuite: suite, info: Data(requestLabel + [0] + hdr))
            let ciphertext = try sender.seal(request)
            let enc = Array(sender.encapsulatedKey)
            return (hdr + enc + Array(ciphertext), ClientContext(sender: sender, encapsulatedKey: enc))
        } catch { throw .invalidKeyConfig("public key rejected") }
    }

    /// The gateway side of one exchange.
    public struct GatewayContext: Sendable {
        let recipient: HPKE.Recipient
        let encapsulatedKey: [UInt8]

        /// Encapsulates the response with a fresh random response nonce.
        public func sealResponse(_ response: [UInt8]) throws(ObliviousHTTPError) -> [UInt8] {
            var nonce = [UInt8](repeating: 0, count: ObliviousHTTP.responseNonceLength)
            var generator = SystemRandomNumberGenerator()
            for i in nonce.indices { nonce[i] = UInt8.random(in: 0...255, using: &generator) }
            return try sealResponse(response, responseNonce: nonce)
        }

        /// With a given response nonce (tests reproduce RFC 9458 Appendix A with it).
        public func sealResponse(_ response: [UInt8], responseNonce nonce: [UInt8]) throws(ObliviousHTTPError) -> [UInt8] {
            do {
                let secret = try recipient.exportSecret(context: ObliviousHTTP.responseLabel, outputByteCount: ObliviousHTTP.responseNonceLength)
                let (key, aeadNonce) = ObliviousHTTP.responseKeys(secret: secret, encapsulatedKey: encapsulatedKey, responseNonce: nonce)
                let box = try AES.GCM.seal(response, using: key, nonce: AES.GCM.Nonce(data: aeadNonce))
                return nonce + Array(box.ciphertext) + Array(box.tag)
            } catch { throw .decryptionFailed("response keys") }
        }
    }

    /// Opens a request with the gateway's private key (whose key id the request must name).
    public static func decapsulateRequest(
        _ message: [UInt8], keyID: UInt8, privateKey: Curve25519.KeyAgreement.PrivateKey
    ) throws(ObliviousHTTPError) -> (request: [UInt8], context: GatewayContext) {
        guard message.count >= 7 + 32 + 16 else { throw .truncated(what: "encapsulated request", offset: message.count) }
        guard message[0] == keyID else { throw .unknownKey(id: message[0]) }
        let kem = UInt16(message[1]) << 8 | UInt16(message[2]), kdf = UInt16(message[3]) << 8 | UInt16(message[4])
        let aead = UInt16(message[5]) << 8 | UInt16(message[6])
        guard kem == 0x20, kdf == 1, aead == 1 else { throw .unsupportedSuite(kem: kem, kdf: kdf, aead: aead) }
        let hdr = Array(message[0..<7]), enc = Array(message[7..<39])
        do {
            var recipient = try HPKE.Recipient(privateKey: privateKey, ciphersuite: suite, info: Data(requestLabel + [0] + hdr), encapsulatedKey: Data(enc))
            let request = try recipient.open(message[39...])
            return (Array(request), GatewayContext(recipient: recipient, encapsulatedKey: enc))
        } catch { throw .decryptionFailed("request") }
    }

    /// §4.4: salt = enc ‖ response_nonce; prk = Extract(salt, secret); key = Expand(prk, "key", Nk);
    /// nonce = Expand(prk, "nonce", Nn).
    static func responseKeys(secret: SymmetricKey, encapsulatedKey: [UInt8], responseNonce: [UInt8]) -> (SymmetricKey, [UInt8]) {
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: secret, salt: encapsulatedKey + responseNonce)
        let key = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("key".utf8), outputByteCount: keyLength)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("nonce".utf8), outputByteCount: nonceLength)
        return (key, nonce.withUnsafeBytes { Array($0) })
    }
}
