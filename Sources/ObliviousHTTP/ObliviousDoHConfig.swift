import Crypto
import Foundation

/// An Oblivious DoH target's public key configuration (RFC 9230 §5): the HPKE suite and the
/// target's public key. NetExt speaks the suite §9 requires — DHKEM(X25519, HKDF-SHA256),
/// HKDF-SHA256, AES-128-GCM — and skips configurations of any other suite or version.
public struct ObliviousDoHConfig: Sendable, Equatable {
    /// The version this document defines (§5).
    public static let version: UInt16 = 0x0001
    public static let kemX25519: UInt16 = 0x0020, kdfHKDFSHA256: UInt16 = 0x0001, aeadAES128GCM: UInt16 = 0x0001

    /// The target's X25519 public key (32 bytes).
    public let publicKey: [UInt8]

    public init(publicKey: Curve25519.KeyAgreement.PublicKey) {
        self.publicKey = Array(publicKey.rawRepresentation)
    }

    init(rawPublicKey: [UInt8]) { publicKey = rawPublicKey }

    /// `ObliviousDoHConfigContents` (§5): kem_id, kdf_id, aead_id, public_key<1..2^16-1>.
    public var contents: [UInt8] {
        var out: [UInt8] = []
        for value in [Self.kemX25519, Self.kdfHKDFSHA256, Self.aeadAES128GCM, UInt16(publicKey.count)] { out += [UInt8(value >> 8), UInt8(value & 0xFF)] }
        return out + publicKey
    }

    /// §6.1: key_id = Expand(Extract("", contents), "odoh key id", Nh) with the suite's KDF.
    public var keyID: [UInt8] {
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: contents), salt: [UInt8]())
        return HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("odoh key id".utf8), outputByteCount: SHA256.byteCount)
            .withUnsafeBytes { Array($0) }
    }

    /// `ObliviousDoHConfigs` (§5): the whole list behind a 2-byte length, each configuration
    /// version ‖ length ‖ contents; the first is the target's preferred one.
    public static func encodeList(_ configs: [ObliviousDoHConfig]) -> [UInt8] {
        var body: [UInt8] = []
        for config in configs {
            let contents = config.contents
            body += [UInt8(version >> 8), UInt8(version & 0xFF), UInt8(contents.count >> 8), UInt8(contents.count & 0xFF)] + contents
        }
        return [UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    /// Parses `ObliviousDoHConfigs`. Configurations of another version or suite are skipped
    /// (§5: clients "MUST ignore" them); a list that breaks off, or bytes after it, is refused
    /// at the offset where it goes wrong; a list with nothing usable is refused too.
    public static func decodeList(_ bytes: [UInt8]) throws(ObliviousHTTPError) -> [ObliviousDoHConfig] {
        guard bytes.count >= 2 else { throw .truncated(what: "ObliviousDoHConfigs length", offset: bytes.count) }
        let total = Int(bytes[0]) << 8 | Int(bytes[1])
        guard 2 + total <= bytes.count else { throw .truncated(what: "ObliviousDoHConfigs", offset: bytes.count) }
        guard 2 + total == bytes.count else { throw .trailingBytes(offset: 2 + total) }
        var configs: [ObliviousDoHConfig] = []
        var offset = 2
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { throw .truncated(what: "ObliviousDoHConfig header", offset: offset) }
            let version = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let start = offset + 4
            guard start + length <= bytes.count else { throw .truncated(what: "ObliviousDoHConfig contents", offset: start) }
            if version == Self.version, let config = try parseContents(Array(bytes[start..<(start + length)]), at: start) { configs.append(config) }
            offset = start + length
        }
        guard !configs.isEmpty else { throw .invalidKeyConfig("no configuration of version 1 with DHKEM(X25519, HKDF-SHA256), HKDF-SHA256 and AES-128-GCM") }
        return configs
    }

    /// One `ObliviousDoHConfigContents`; nil for a suite this implementation lacks.
    static func parseContents(_ bytes: [UInt8], at base: Int) throws(ObliviousHTTPError) -> ObliviousDoHConfig? {
        guard bytes.count >= 8 else { throw .truncated(what: "ObliviousDoHConfigContents", offset: base + bytes.count) }
        func field(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
        let keyLength = Int(field(6))
        guard 8 + keyLength == bytes.count else { throw .invalidKeyConfig("public key of \(keyLength) bytes in \(bytes.count - 8) at offset \(base + 6)") }
        guard field(0) == kemX25519, field(2) == kdfHKDFSHA256, field(4) == aeadAES128GCM else { return nil }
        guard keyLength == 32 else { throw .invalidKeyConfig("an X25519 public key is 32 bytes, not \(keyLength) (offset \(base + 6))") }
        return ObliviousDoHConfig(rawPublicKey: Array(bytes[8...]))
    }
}
