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

    /// AlgorithmIdentifier of id-RSASSA-PSS with RSASSA-PSS-params {SHA-384, MGF1(SHA-384),
    /// saltLength 48} (RFC 4055 §3.1), as RFC 9578 §6.5 requires for published issuer keys.
    static let pssAlgorithmIdentifier: [UInt8] = [
        0x30, 0x3d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a,
        0x30, 0x30,
        0xa0, 0x0d, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
        0xa1, 0x1a, 0x30, 0x18, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08,
        0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
        0xa2, 0x03, 0x02, 0x01, 0x30,
    ]

    /// The SubjectPublicKeyInfo an issuer publishes for its key (what token key ids hash).
    static func pssSubjectPublicKeyInfo(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return element(0x02, value)
        }
        let rsaPublicKey = element(0x30, integer(modulus) + integer(exponent))
        return element(0x30, pssAlgorithmIdentifier + element(0x03, [0] + rsaPublicKey))
    }

    /// A DER element with a definite length.
    static func element(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        let count = contents.count
        let length: [UInt8] = count < 0x80 ? [UInt8(count)]
            : count <= 0xFF ? [0x81, UInt8(count)]
            : count <= 0xFFFF ? [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
            : [0x83, UInt8(count >> 16), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
        return [tag] + length + contents
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
