import Crypto
import Foundation

/// Static X25519 keys as the configuration files write them: 32 bytes, base64.
public enum TunnelKeys {
    /// A new private key.
    public static func generatePrivateKey() -> Curve25519.KeyAgreement.PrivateKey {
        Curve25519.KeyAgreement.PrivateKey()
    }

    public static func privateKey(base64 text: String) throws(TunnelProtocolError) -> Curve25519.KeyAgreement.PrivateKey {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), data.count == 32,
              let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: data) else {
            throw .badPayload("a private key must be 32 bytes of base64")
        }
        return key
    }

    public static func publicKey(base64 text: String) throws(TunnelProtocolError) -> Curve25519.KeyAgreement.PublicKey {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), data.count == 32,
              let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: data) else {
            throw .badPayload("a public key must be 32 bytes of base64")
        }
        return key
    }

    public static func base64(_ key: Curve25519.KeyAgreement.PublicKey) -> String {
        key.rawRepresentation.base64EncodedString()
    }

    public static func base64(_ key: Curve25519.KeyAgreement.PrivateKey) -> String {
        key.rawRepresentation.base64EncodedString()
    }

    /// X25519, refusing an all-zero result (a small-order peer key), as Noise §12.1 permits.
    static func agree(_ privateKey: Curve25519.KeyAgreement.PrivateKey, _ publicKey: Curve25519.KeyAgreement.PublicKey) throws(TunnelProtocolError) -> [UInt8] {
        guard let secret = try? privateKey.sharedSecretFromKeyAgreement(with: publicKey) else { throw .invalidPublicKey }
        let bytes = secret.withUnsafeBytes { Array($0) }
        var accumulator: UInt8 = 0
        for byte in bytes { accumulator |= byte }
        guard accumulator != 0 else { throw .invalidPublicKey }
        return bytes
    }
}
