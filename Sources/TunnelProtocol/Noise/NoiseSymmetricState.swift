import Crypto
import Foundation

/// Noise's SymmetricState and CipherState (Noise Protocol Framework, revision 34, §5.1–5.2) for
/// `Noise_IK_25519_ChaChaPoly_SHA256`: the chaining key `ck`, the handshake hash `h`, and the
/// current key with its nonce.
struct NoiseSymmetricState {
    /// "Noise_IK_25519_ChaChaPoly_SHA256" is exactly HASHLEN (32) bytes, so it is used as `h`
    /// directly (§5.2 InitializeSymmetric).
    static let protocolName = Array("Noise_IK_25519_ChaChaPoly_SHA256".utf8)

    private(set) var chainingKey: [UInt8]
    private(set) var hash: [UInt8]
    private var key: SymmetricKey?
    private var nonce: UInt64 = 0

    init(prologue: [UInt8]) {
        hash = Self.protocolName
        chainingKey = hash
        mixHash(prologue)
    }

    /// MixHash(data): h = HASH(h || data).
    mutating func mixHash(_ data: some Sequence<UInt8>) {
        var hasher = SHA256()
        hasher.update(data: hash)
        hasher.update(data: Array(data))
        hash = Array(hasher.finalize())
    }

    /// MixKey(ikm): ck, k = HKDF(ck, ikm, 2); n = 0.
    mutating func mixKey(_ inputKeyMaterial: some ContiguousBytes) {
        let (newChainingKey, newKey) = NoiseHKDF.derive2(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial)
        chainingKey = newChainingKey
        key = SymmetricKey(data: newKey)
        nonce = 0
    }

    /// EncryptAndHash(plaintext): c = ENCRYPT(k, n++, h, plaintext); MixHash(c).
    mutating func encryptAndHash(_ plaintext: [UInt8]) throws -> [UInt8] {
        guard let key else {
            mixHash(plaintext)
            return plaintext
        }
        let sealed = try ChaChaPoly.seal(plaintext, using: key, nonce: NoiseNonce.make(nonce), authenticating: hash)
        nonce += 1
        let ciphertext = Array(sealed.ciphertext) + Array(sealed.tag)
        mixHash(ciphertext)
        return ciphertext
    }

    /// DecryptAndHash(ciphertext): p = DECRYPT(k, n++, h, ciphertext); MixHash(ciphertext).
    mutating func decryptAndHash(_ ciphertext: [UInt8], stage: String) throws(TunnelProtocolError) -> [UInt8] {
        guard let key else {
            mixHash(ciphertext)
            return ciphertext
        }
        guard ciphertext.count >= 16 else { throw .decryptionFailed(stage: stage) }
        let plaintext: [UInt8]
        do {
            let box = try ChaChaPoly.SealedBox(nonce: NoiseNonce.make(nonce), ciphertext: ciphertext.dropLast(16), tag: ciphertext.suffix(16))
            plaintext = Array(try ChaChaPoly.open(box, using: key, authenticating: hash))
        } catch {
            throw .decryptionFailed(stage: stage)
        }
        nonce += 1
        mixHash(ciphertext)
        return plaintext
    }

    /// Split(): the two transport keys, initiator→responder first.
    func split() -> (initiatorToResponder: SymmetricKey, responderToInitiator: SymmetricKey) {
        let (first, second) = NoiseHKDF.derive2(chainingKey: chainingKey, inputKeyMaterial: [UInt8]())
        return (SymmetricKey(data: first), SymmetricKey(data: second))
    }
}

/// Noise's HKDF (§4.3) over HMAC-SHA256.
enum NoiseHKDF {
    static func derive2(chainingKey: [UInt8], inputKeyMaterial: some ContiguousBytes) -> ([UInt8], [UInt8]) {
        let temporaryKey = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: inputKeyMaterial.withUnsafeBytes { Array($0) }, using: SymmetricKey(data: chainingKey))))
        let output1 = Array(HMAC<SHA256>.authenticationCode(for: [0x01], using: temporaryKey))
        let output2 = Array(HMAC<SHA256>.authenticationCode(for: output1 + [0x02], using: temporaryKey))
        return (output1, output2)
    }
}

/// ChaChaPoly nonces as Noise defines them (§12.3): 32 zero bits, then the 64-bit counter
/// little-endian.
enum NoiseNonce {
    static func make(_ counter: UInt64) -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        for index in 0..<8 { bytes[4 + index] = UInt8(truncatingIfNeeded: counter >> (8 * UInt64(index))) }
        // A 12-byte array is always a valid nonce.
        return try! ChaChaPoly.Nonce(data: bytes)
    }
}
