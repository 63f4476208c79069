import Crypto
import CryptoExtras
import Foundation

/// An issuer's signing key for token type 0x0002 (RSABSSA-SHA384-PSS-Deterministic, 2048 bits)
/// with the SubjectPublicKeyInfo it publishes and the key id derived from it.
public struct IssuerKey: @unchecked Sendable {
    public let privateKey: _RSA.BlindSigning.PrivateKey<SHA384>
    /// The published key (id-RSASSA-PSS SubjectPublicKeyInfo, RFC 9578 §6.5).
    public let publicKeyDER: [UInt8]
    /// SHA-256 of `publicKeyDER`.
    public let keyID: [UInt8]

    /// A fresh 2048-bit key.
    public static func generate() throws(PrivacyPassError) -> IssuerKey {
        do { return try IssuerKey(try _RSA.BlindSigning.PrivateKey(keySize: .bits2048, parameters: .RSABSSA_SHA384_PSS_Deterministic)) } catch let error as PrivacyPassError {
            throw error
        } catch { throw .cryptographic("generating an RSA key") }
    }

    /// A key from its PEM (PKCS#1 or PKCS#8) text.
    public init(pem: String) throws(PrivacyPassError) {
        do { try self.init(try _RSA.BlindSigning.PrivateKey(pemRepresentation: pem, parameters: .RSABSSA_SHA384_PSS_Deterministic)) } catch let error as PrivacyPassError {
            throw error
        } catch { throw .malformed(what: "issuer private key", reason: "not an RSA private key in PEM") }
    }

    init(_ key: _RSA.BlindSigning.PrivateKey<SHA384>) throws(PrivacyPassError) {
        guard key.keySizeInBits == 2048 else { throw .malformed(what: "issuer private key", reason: "\(key.keySizeInBits) bits, expected 2048") }
        privateKey = key
        let primitives: _RSA.BlindSigning.PublicKey<SHA384>.Primitives
        do { primitives = try key.publicKey.getKeyPrimitives() } catch { throw .cryptographic("reading the public key") }
        publicKeyDER = RSAPublicKeyDER.pssSubjectPublicKeyInfo(modulus: [UInt8](primitives.modulus), exponent: [UInt8](primitives.publicExponent))
        keyID = PrivateToken.keyID(publicKeyDER: publicKeyDER)
    }

    /// The private key as PEM, for the issuer's key directory (0600).
    public var pem: String { privateKey.pemRepresentation }

    /// Signs a blinded token request made for this key.
    public func respond(to request: BlindRSAIssuance.TokenRequest) throws(PrivacyPassError) -> [UInt8] {
        try BlindRSAIssuance.respond(to: request, privateKey: privateKey, publicKeyDER: publicKeyDER)
    }
}
