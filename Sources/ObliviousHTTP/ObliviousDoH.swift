import Crypto
import Foundation

/// Oblivious DNS over HTTPS messages (RFC 9230 §6): a DNS message and zero padding, sealed
/// with HPKE to the target's key (queries) or with a key exported from that context
/// (responses), so a proxy between client and target carries what it cannot read.
public enum ObliviousDoH {
    /// The media type of both directions (§4.1, §4.3).
    public static let mediaType = "application/oblivious-dns-message"
    static let suite = HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_128)
    static let queryType: UInt8 = 0x01, responseType: UInt8 = 0x02
    static let queryLabel = Array("odoh query".utf8), responseLabel = Array("odoh response".utf8)
    /// Nk and Nn of AES-128-GCM; the response nonce is max(Nn, Nk) bytes (§8 step 6).
    static let keyLength = 16, nonceLength = 12, responseNonceLength = 16
    static let encapsulatedKeyLength = 32, tagLength = 16
    /// The largest sealed message a target or proxy reads: a whole DNS message (65,535 bytes) with
    /// padding, key id and the seal's overhead.
    public static let maximumMessageBytes = 2 * 65_536

    /// `ObliviousDoHMessage` (§6.1): message_type, key_id<0..2^16-1>, encrypted_message<1..2^16-1>.
    public struct Message: Sendable, Equatable {
        public var type: UInt8
        /// The configuration's key id (queries) or the response nonce (responses).
        public var keyID: [UInt8]
        public var encrypted: [UInt8]

        public var encoded: [UInt8] {
            [type] + ObliviousDoH.lengthPrefixed(keyID) + ObliviousDoH.lengthPrefixed(encrypted)
        }

        /// Parses one message; refuses an unknown type, a field that breaks off, an empty
        /// encrypted message and bytes after the message, naming the offset.
        public init(decoding bytes: [UInt8]) throws(ObliviousHTTPError) {
            guard let first = bytes.first else { throw .truncated(what: "ObliviousDoHMessage", offset: 0) }
            guard first == ObliviousDoH.queryType || first == ObliviousDoH.responseType else {
                throw .invalidMessage("message type \(first) at offset 0 is neither a query (1) nor a response (2)")
            }
            var offset = 1
            let keyID = try ObliviousDoH.readPrefixed(bytes, &offset, what: "key_id")
            let encrypted = try ObliviousDoH.readPrefixed(bytes, &offset, what: "encrypted_message")
            guard !encrypted.isEmpty else { throw .invalidMessage("the encrypted message at offset \(offset - 2) is empty") }
            guard offset == bytes.count else { throw .trailingBytes(offset: offset) }
            self.init(type: first, keyID: keyID, encrypted: encrypted)
        }

        public init(type: UInt8, keyID: [UInt8], encrypted: [UInt8]) {
            self.type = type
            self.keyID = keyID
            self.encrypted = encrypted
        }
    }

    /// `ObliviousDoHMessagePlaintext` (§6.1): dns_message<1..2^16-1> ‖ padding<0..2^16-1>.
    static func plaintext(_ dns: [UInt8], padding: Int) -> [UInt8] {
        lengthPrefixed(dns) + lengthPrefixed([UInt8](repeating: 0, count: padding))
    }

    /// The DNS message of a plaintext whose padding is all zeros (§6.1: "MUST contain all zeros").
    static func dnsMessage(ofPlaintext bytes: [UInt8]) throws(ObliviousHTTPError) -> [UInt8] {
        var offset = 0
        let dns = try readPrefixed(bytes, &offset, what: "dns_message")
        guard !dns.isEmpty else { throw .invalidMessage("the DNS message is empty") }
        let paddingStart = offset + 2
        let padding = try readPrefixed(bytes, &offset, what: "padding")
        if let bad = padding.firstIndex(where: { $0 != 0 }) { throw .invalidMessage("padding byte at offset \(paddingStart + bad) is not zero") }
        guard offset == bytes.count else { throw .trailingBytes(offset: offset) }
        return dns
    }

    /// The client side of one query: seal it, then open its response.
    public struct ClientContext: Sendable {
        let sender: HPKE.Sender
        let plaintext: [UInt8]

        /// The DNS message of the target's response (§6.2 `decrypt_response_body`); the
        /// response nonce travels in the message's key_id field.
        public func openResponse(_ bytes: [UInt8]) throws(ObliviousHTTPError) -> [UInt8] {
            let message = try Message(decoding: bytes)
            guard message.type == ObliviousDoH.responseType else { throw .invalidMessage("a query came back where a response was expected") }
            guard message.keyID.count == ObliviousDoH.responseNonceLength else {
                throw .invalidMessage("the response nonce is \(message.keyID.count) bytes, not \(ObliviousDoH.responseNonceLength)")
            }
            let opened: Data
            do {
                let secret = try sender.exportSecret(context: ObliviousDoH.responseLabel, outputByteCount: ObliviousDoH.keyLength)
                let (key, nonce) = ObliviousDoH.responseKeys(secret: secret, queryPlaintext: plaintext, responseNonce: message.keyID)
                let box = try AES.GCM.SealedBox(combined: Data(nonce) + Data(message.encrypted))
                opened = try AES.GCM.open(box, using: key, authenticating: ObliviousDoH.additionalData(ObliviousDoH.responseType, message.keyID))
            } catch { throw .decryptionFailed("Oblivious DoH response") }
            return try ObliviousDoH.dnsMessage(ofPlaintext: Array(opened))
        }
    }

    /// Seals a DNS query for the target's configuration (§6.2 `encrypt_query_body`, §7):
    /// `padding` zero bytes go into the plaintext.
    public static func sealQuery(_ dns: [UInt8], padding: Int = 0, config: ObliviousDoHConfig) throws(ObliviousHTTPError) -> (message: [UInt8], context: ClientContext) {
        guard !dns.isEmpty, dns.count <= 65535, padding <= 65535 else { throw .invalidMessage("a DNS message of \(dns.count) bytes cannot be sent") }
        let keyID = config.keyID
        let plain = plaintext(dns, padding: padding)
        do {
            let recipient = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: config.publicKey)
            var sender = try HPKE.Sender(recipientKey: recipient, ciphersuite: suite, info: Data(queryLabel))
            let sealed = try sender.seal(plain, authenticating: additionalData(queryType, keyID))
            let message = Message(type: queryType, keyID: keyID, encrypted: Array(sender.encapsulatedKey) + Array(sealed))
            return (message.encoded, ClientContext(sender: sender, plaintext: plain))
        } catch { throw .invalidKeyConfig("the target's public key is not a usable X25519 key") }
    }

    /// A target's private key and the configuration it publishes.
    public struct TargetKey: Sendable {
        public let privateKey: Curve25519.KeyAgreement.PrivateKey
        public let config: ObliviousDoHConfig
        public let keyID: [UInt8]

        public init(privateKey: Curve25519.KeyAgreement.PrivateKey) {
            self.privateKey = privateKey
            config = ObliviousDoHConfig(publicKey: privateKey.publicKey)
            keyID = config.keyID
        }
    }

    /// The target side of one query: the DNS message it carried, and how to seal the answer.
    public struct TargetContext: Sendable {
        let recipient: HPKE.Recipient
        let plaintext: [UInt8]

        /// Seals the answer under a fresh random response nonce (§8 steps 5–9).
        public func sealResponse(_ dns: [UInt8], padding: Int = 0) throws(ObliviousHTTPError) -> [UInt8] {
            var nonce = [UInt8](repeating: 0, count: ObliviousDoH.responseNonceLength)
            var generator = SystemRandomNumberGenerator()
            for index in nonce.indices { nonce[index] = UInt8.random(in: 0...255, using: &generator) }
            return try sealResponse(dns, padding: padding, responseNonce: nonce)
        }

        /// With a given nonce (the published test vectors fix it).
        public func sealResponse(_ dns: [UInt8], padding: Int, responseNonce nonce: [UInt8]) throws(ObliviousHTTPError) -> [UInt8] {
            guard !dns.isEmpty, dns.count <= 65535, padding <= 65535 else { throw .invalidMessage("a DNS answer of \(dns.count) bytes cannot be sent") }
            do {
                let secret = try recipient.exportSecret(context: ObliviousDoH.responseLabel, outputByteCount: ObliviousDoH.keyLength)
                let (key, aeadNonce) = ObliviousDoH.responseKeys(secret: secret, queryPlaintext: plaintext, responseNonce: nonce)
                let box = try AES.GCM.seal(
                    ObliviousDoH.plaintext(dns, padding: padding), using: key, nonce: AES.GCM.Nonce(data: aeadNonce),
                    authenticating: ObliviousDoH.additionalData(ObliviousDoH.responseType, nonce))
                return Message(type: ObliviousDoH.responseType, keyID: nonce, encrypted: Array(box.ciphertext) + Array(box.tag)).encoded
            } catch { throw .decryptionFailed("response keys") }
        }
    }

    /// Opens a query with whichever of `keys` its key id names (§8 steps 1–4). An unknown key
    /// id is ``ObliviousHTTPError/unknownObliviousDoHKey`` (the target answers 401, §4.3, §8).
    public static func openQuery(_ bytes: [UInt8], keys: [TargetKey]) throws(ObliviousHTTPError) -> (dns: [UInt8], context: TargetContext) {
        let message = try Message(decoding: bytes)
        guard message.type == queryType else { throw .invalidMessage("a response was sent where a query was expected") }
        guard let key = keys.first(where: { $0.keyID == message.keyID }) else { throw .unknownObliviousDoHKey }
        guard message.encrypted.count > encapsulatedKeyLength + tagLength else { throw .truncated(what: "encrypted query", offset: message.encrypted.count) }
        let opened: Data
        let recipient: HPKE.Recipient
        do {
            var opening = try HPKE.Recipient(
                privateKey: key.privateKey, ciphersuite: suite, info: Data(queryLabel),
                encapsulatedKey: Data(message.encrypted.prefix(encapsulatedKeyLength)))
            opened = try opening.open(message.encrypted.dropFirst(encapsulatedKeyLength), authenticating: additionalData(queryType, message.keyID))
            recipient = opening
        } catch { throw .decryptionFailed("Oblivious DoH query") }
        let plain = Array(opened)
        return (try dnsMessage(ofPlaintext: plain), TargetContext(recipient: recipient, plaintext: plain))
    }

    /// §6.2 `derive_secrets`: salt = Q_plain ‖ len(nonce) ‖ nonce; prk = Extract(salt, secret);
    /// key = Expand(prk, "odoh key", Nk); nonce = Expand(prk, "odoh nonce", Nn).
    static func responseKeys(secret: SymmetricKey, queryPlaintext: [UInt8], responseNonce: [UInt8]) -> (SymmetricKey, [UInt8]) {
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: secret, salt: queryPlaintext + lengthPrefixed(responseNonce))
        let key = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("odoh key".utf8), outputByteCount: keyLength)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("odoh nonce".utf8), outputByteCount: nonceLength)
        return (key, nonce.withUnsafeBytes { Array($0) })
    }

    /// aad = type ‖ len(key_id) ‖ key_id (§6.2).
    static func additionalData(_ type: UInt8, _ keyID: [UInt8]) -> [UInt8] { [type] + lengthPrefixed(keyID) }

    static func lengthPrefixed(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8 & 0xFF), UInt8(bytes.count & 0xFF)] + bytes }

    static func readPrefixed(_ bytes: [UInt8], _ offset: inout Int, what: String) throws(ObliviousHTTPError) -> [UInt8] {
        guard offset + 2 <= bytes.count else { throw .truncated(what: "\(what) length", offset: offset) }
        let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        guard offset + 2 + length <= bytes.count else { throw .truncated(what: what, offset: offset + 2) }
        defer { offset += 2 + length }
        return Array(bytes[(offset + 2)..<(offset + 2 + length)])
    }
}
