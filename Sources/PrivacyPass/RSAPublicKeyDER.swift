import Crypto
import CryptoExtras

/// Reads an RSA SubjectPublicKeyInfo (RFC 5280 §4.1.2.7) whose algorithm may be rsaEncryption or
/// id-RSASSA-PSS (RFC 9578 §6.5 publishes issuer keys with the PSS identifier), returning the
/// modulus and exponent of its RSAPublicKey (RFC 8017 §A.1.1). Minimal DER: definite lengths only.
enum RSAPublicKeyDER {
    static func components(_ der: [UInt8]) throws(PrivacyPassError) -> (modulus: [UInt8], exponent: [UInt8]) {
        var outer = DERReader(der)
        var spki = try outer.element(tag: 0x30, "SubjectPublicKeyInfo")
        _ = try spki.element(tag: 0x30, "AlgorithmIdentifier")
        var bits = try spki.element(tag: 0x03, "subjectPublicKey")
        guard try bits.byte() == 0 else { throw .malformed(what: "issuer key", reason: "BIT STRING with unused bits") }
        var key = try bits.element(tag: 0x30, "RSAPublicKey")
        var modulus = try key.element(tag: 0x02, "modulus").rest
        let exponent = try key.element(tag: 0x02, "publicExponent").rest
        while modulus.first == 0 { modulus.removeFirst() }
        return (modulus, exponent)
    }

    /// The blind-signing public key for issuer key bytes, with RFC 9578's parameters.
    static func blindSigningKey(_ der: [UInt8]) throws(PrivacyPassError) -> _RSA.BlindSigning.PublicKey<SHA384> {
        let (n, e) = try components(der)
        do { return try _RSA.BlindSigning.PublicKey<SHA384>(n: n, e: e, parameters: .RSABSSA_SHA384_PSS_Deterministic) } catch {
            throw .malformed(what: "issuer key", reason: "not a usable RSA key")
        }
    }
}

struct DERReader {
    var bytes: ArraySlice<UInt8>

    init(_ bytes: [UInt8]) { self.bytes = bytes[...] }
    init(_ slice: ArraySlice<UInt8>) { bytes = slice }

    var rest: [UInt8] { Array(bytes) }

    mutating func byte() throws(PrivacyPassError) -> UInt8 {
        guard let first = bytes.first else { throw .malformed(what: "issuer key", reason: "DER ends early") }
        bytes = bytes.dropFirst()
        return first
    }

    /// The next element, which must carry `tag`; returns a reader over its contents.
    mutating func element(tag: UInt8, _ what: String) throws(PrivacyPassError) -> DERReader {
        guard try byte() == tag else { throw .malformed(what: "issuer key", reason: "\(what) has the wrong DER tag") }
        var length = Int(try byte())
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 3 else { throw .malformed(what: "issuer key", reason: "\(what) length of \(count) bytes") }
            length = 0
            for _ in 0..<count { length = length << 8 | Int(try byte()) }
        }
        guard length <= bytes.count else { throw .malformed(what: "issuer key", reason: "\(what) longer than the key") }
        let contents = bytes.prefix(length)
        bytes = bytes.dropFirst(length)
        return DERReader(contents)
    }
}
