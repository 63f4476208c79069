import Crypto
import Foundation

/// An Oblivious HTTP key configuration (RFC 9458 §3): key id, KEM, public key, and the
/// (KDF, AEAD) pairs the gateway accepts. NetExt supports DHKEM(X25519, HKDF-SHA256) with
/// HKDF-SHA256 and AES-128-GCM (the suite of RFC 9458 Appendix A).
public struct OHTTPKeyConfig: Sendable, Equatable {
    public static let kemX25519: UInt16 = 0x0020
    public static let kdfHKDFSHA256: UInt16 = 0x0001
    public static let aeadAES128GCM: UInt16 = 0x0001

    public let keyID: UInt8
    public let kemID: UInt16
    public let publicKey: [UInt8]
    public let symmetricAlgorithms: [(kdf: UInt16, aead: UInt16)]

    /// A configuration for an X25519 key; `symmetricAlgorithms` must include
    /// (HKDF-SHA256, AES-128-GCM), the pair this implementation uses.
    public init(
        keyID: UInt8, publicKey: Curve25519.KeyAgreement.PublicKey,
        symmetricAlgorithms: [(kdf: UInt16, aead: UInt16)] = [(OHTTPKeyConfig.kdfHKDFSHA256, OHTTPKeyConfig.aeadAES128GCM)]
    ) {
        self.keyID = keyID
        kemID = Self.kemX25519
        self.publicKey = Array(publicKey.rawRepresentation)
        self.symmetricAlgorithms = symmetricAlgorithms
    }

    public static func == (a: OHTTPKeyConfig, b: OHTTPKeyConfig) -> Bool {
        a.keyID == b.keyID && a.kemID == b.kemID && a.publicKey == b.publicKey
            && a.symmetricAlgorithms.elementsEqual(b.symmetricAlgorithms, by: ==)
    }

    /// §3.1: key_id(8) kem_id(16) public_key(Npk) symmetric_algorithms_length(16) (kdf(16) aead(16))…
    public func encoded() -> [UInt8] {
        var out: [UInt8] = [keyID, UInt8(kemID >> 8), UInt8(kemID & 0xFF)] + publicKey
        let length = symmetricAlgorithms.count * 4
        out += [UInt8(length >> 8), UInt8(length & 0xFF)]
        for (kdf, aead) in symmetricAlgorithms { out += [UInt8(kdf >> 8), UInt8(kdf & 0xFF), UInt8(aead >> 8), UInt8(aead & 0xFF)] }
        return out
    }

    /// Parses one configuration; refuses unknown KEMs, short input and trailing bytes.
    public init(decoding bytes: [UInt8]) throws(ObliviousHTTPError) {
        guard bytes.count >= 3 else { throw .invalidKeyConfig("\(bytes.count) bytes, shorter than the header") }
        keyID = bytes[0]
        kemID = UInt16(bytes[1]) << 8 | UInt16(bytes[2])
        guard kemID == Self.kemX25519 else { throw .invalidKeyConfig(String(format: "KEM 0x%04x is not DHKEM(X25519, HKDF-SHA256)", kemID)) }
        guard bytes.count >= 3 + 32 + 2 else { throw .invalidKeyConfig("public key or algorithm list truncated") }
        publicKey = Array(bytes[3..<35])
        let length = Int(bytes[35]) << 8 | Int(bytes[36])
        guard length > 0, length % 4 == 0, 37 + length == bytes.count else {
            throw .invalidKeyConfig("algorithm list of \(length) bytes in \(bytes.count - 37) remaining")
        }
        var algorithms: [(UInt16, UInt16)] = []
        var offset = 37
        while offset < bytes.count {
            algorithms.append((UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1]), UInt16(bytes[offset + 2]) << 8 | UInt16(bytes[offset + 3])))
            offset += 4
        }
        symmetricAlgorithms = algorithms
    }

    /// Whether the suite this implementation uses is offered.
    var offersSupportedSuite: Bool {
        symmetricAlgorithms.contains { $0.kdf == Self.kdfHKDFSHA256 && $0.aead == Self.aeadAES128GCM }
    }
}

extension OHTTPKeyConfig {
    public static let listMediaType = "application/ohttp-keys"

    /// A list of configurations as `application/ohttp-keys` carries them (RFC 9540 §3): each
    /// prefixed by a 2-byte length. Configurations for KEMs this implementation lacks are
    /// skipped; a truncated list is refused at the offset where it breaks.
    public static func decodeList(_ bytes: [UInt8]) throws(ObliviousHTTPError) -> [OHTTPKeyConfig] {
        var configs: [OHTTPKeyConfig] = []
        var offset = 0
        while offset < bytes.count {
            guard offset + 2 <= bytes.count else { throw .truncated(what: "key configuration list", offset: offset) }
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            guard offset + 2 + length <= bytes.count else { throw .truncated(what: "key configuration list", offset: offset) }
            if let config = try? OHTTPKeyConfig(decoding: Array(bytes[(offset + 2)..<(offset + 2 + length)])) { configs.append(config) }
            offset += 2 + length
        }
        return configs
    }

    /// Encodes configurations as `application/ohttp-keys`.
    public static func encodeList(_ configs: [OHTTPKeyConfig]) -> [UInt8] {
        configs.flatMap { config -> [UInt8] in
            let bytes = config.encoded()
            return [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
        }
    }
}
