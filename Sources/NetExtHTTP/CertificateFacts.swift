import Crypto
import Foundation
import SwiftASN1

/// What App Transport Security looks at in a certificate, read from its DER (RFC 5280 §4.1):
/// the public key's algorithm and size, the hash its issuer signed it with, the SHA-256 of its
/// SubjectPublicKeyInfo (what pins name, as `NSPinnedDomains` does), and whether it carries
/// signed certificate timestamps (RFC 6962 §3.3).
///
/// Read by hand rather than through a certificate library so that a weak certificate (a 1024-bit
/// RSA key, which such libraries refuse to load) is described, not merely rejected.
public struct CertificateFacts: Sendable, Equatable {
    /// The subject public key's algorithm and strength.
    public enum KeyKind: Sendable, Equatable, CustomStringConvertible {
        case rsa(bits: Int)
        case ellipticCurve(name: String, bits: Int)
        case ed25519
        case other(oid: String)

        public var description: String {
            switch self {
            case .rsa(let bits): "RSA \(bits)-bit"
            case .ellipticCurve(let name, let bits): "ECDSA \(name) (\(bits)-bit)"
            case .ed25519: "Ed25519"
            case .other(let oid): "key algorithm \(oid)"
            }
        }
    }

    public var key: KeyKind
    /// The signature algorithm's name, e.g. "sha256WithRSAEncryption".
    public var signatureAlgorithm: String
    /// The hash inside the signature algorithm ("SHA-1", "SHA-256", …; "MD5" for the oldest).
    public var signatureHash: String
    /// Base64 of SHA-256 over the DER SubjectPublicKeyInfo: an `NSPinnedLeafIdentities` entry's
    /// `SPKI-SHA256-BASE64`.
    public var spkiSHA256Base64: String
    /// An embedded SCT list extension (1.3.6.1.4.1.11129.2.4.2) is present.
    public var hasEmbeddedSCTs: Bool
    /// The subject's common name, when it has one (for messages).
    public var commonName: String?
    /// The issuer's common name, when it has one.
    public var issuerCommonName: String?
    /// The validity period (RFC 5280 §4.1.2.5).
    public var notBefore: Date
    public var notAfter: Date

    /// Reads a DER certificate; throws a sentence naming the part that could not be read.
    public init(der: [UInt8]) throws(CertificateFactsError) {
        do {
            let certificate = try DER.parse(der)
            let parts = try Self.children(of: certificate, "the certificate")
            guard parts.count == 3 else { throw CertificateFactsError("the certificate is not a SEQUENCE of three parts") }
            let signatureOID = try Self.firstOID(in: parts[1], "the signature algorithm")
            (signatureAlgorithm, signatureHash) = Self.signatureNames[signatureOID] ?? (signatureOID, "unknown")
            var tbs = try Self.children(of: parts[0], "the to-be-signed certificate")
            if let first = tbs.first, first.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                tbs.removeFirst()  // [0] version
            }
            // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo, …
            guard tbs.count >= 6 else { throw CertificateFactsError("the to-be-signed certificate has \(tbs.count) fields, fewer than 6") }
            commonName = Self.commonName(in: tbs[4])
            issuerCommonName = Self.commonName(in: tbs[2])
            let validity = try Self.children(of: tbs[3], "the validity")
            guard validity.count == 2 else { throw CertificateFactsError("the validity is not two times") }
            notBefore = try Self.date(validity[0])
            notAfter = try Self.date(validity[1])
            let spki = tbs[5]
            spkiSHA256Base64 = Data(SHA256.hash(data: Array(spki.encodedBytes))).base64EncodedString()
            key = try Self.keyKind(of: spki)
            hasEmbeddedSCTs = tbs.dropFirst(6).contains { node in
                node.identifier == ASN1Identifier(tagWithNumber: 3, tagClass: .contextSpecific)
                    && (Self.extensionOIDs(in: node).contains(Self.sctListOID))
            }
        } catch let error as CertificateFactsError {
            throw error
        } catch {
            throw CertificateFactsError("the certificate is not valid DER (\(error))")
        }
    }

    static let sctListOID = "1.3.6.1.4.1.11129.2.4.2"

    /// RFC 3279 §2.2, RFC 4055 §5, RFC 5758 §3.2, RFC 8410 §3.
    static let signatureNames: [String: (String, String)] = [
        "1.2.840.113549.1.1.4": ("md5WithRSAEncryption", "MD5"),
        "1.2.840.113549.1.1.5": ("sha1WithRSAEncryption", "SHA-1"),
        "1.2.840.10045.4.1": ("ecdsa-with-SHA1", "SHA-1"),
        "1.2.840.113549.1.1.11": ("sha256WithRSAEncryption", "SHA-256"),
        "1.2.840.113549.1.1.12": ("sha384WithRSAEncryption", "SHA-384"),
        "1.2.840.113549.1.1.13": ("sha512WithRSAEncryption", "SHA-512"),
        "1.2.840.113549.1.1.10": ("RSASSA-PSS", "SHA-2 (PSS)"),
        "1.2.840.10045.4.3.2": ("ecdsa-with-SHA256", "SHA-256"),
        "1.2.840.10045.4.3.3": ("ecdsa-with-SHA384", "SHA-384"),
        "1.2.840.10045.4.3.4": ("ecdsa-with-SHA512", "SHA-512"),
        "1.3.101.112": ("Ed25519", "none (EdDSA)"),
    ]

    /// RFC 5480 §2.1.1.1 named curves.
    static let curves: [String: (String, Int)] = [
        "1.2.840.10045.3.1.7": ("P-256", 256),
        "1.3.132.0.34": ("P-384", 384),
        "1.3.132.0.35": ("P-521", 521),
        "1.2.840.10045.3.1.1": ("P-192", 192),
        "1.3.132.0.33": ("P-224", 224),
    ]

    private static func keyKind(of spki: ASN1Node) throws -> KeyKind {
        let parts = try children(of: spki, "the subject public key info")
        guard parts.count == 2 else { throw CertificateFactsError("the subject public key info is not two parts") }
        let algorithm = try children(of: parts[0], "the public key algorithm")
        guard let oidNode = algorithm.first else { throw CertificateFactsError("the public key algorithm is empty") }
        let oid = try ASN1ObjectIdentifier(derEncoded: oidNode).description
        switch oid {
        case "1.2.840.113549.1.1.1":
            let bits = try ASN1BitString(derEncoded: parts[1])
            let rsaKey = try children(of: try DER.parse(Array(bits.bytes)), "the RSA public key")
            guard let modulusNode = rsaKey.first, case .primitive(let modulus) = modulusNode.content else {
                throw CertificateFactsError("the RSA public key has no modulus")
            }
            return .rsa(bits: significantBits(modulus))
        case "1.2.840.10045.2.1":
            guard algorithm.count == 2, let curveOID = try? ASN1ObjectIdentifier(derEncoded: algorithm[1]).description else {
                return .ellipticCurve(name: "explicit parameters", bits: 0)
            }
            let (name, bits) = curves[curveOID] ?? (curveOID, 0)
            return .ellipticCurve(name: name, bits: bits)
        case "1.3.101.112":
            return .ed25519
        default:
            return .other(oid: oid)
        }
    }

    /// The number of bits of a DER INTEGER's magnitude (leading zero octets and bits dropped).
    static func significantBits(_ integer: ArraySlice<UInt8>) -> Int {
        guard let first = integer.firstIndex(where: { $0 != 0 }) else { return 0 }
        let leading = integer[first].leadingZeroBitCount
        return (integer.endIndex - first) * 8 - leading
    }

    /// A UTCTime or GeneralizedTime (RFC 5280 §4.1.2.5.1–2) as a date.
    private static func date(_ node: ASN1Node) throws -> Date {
        var parts = DateComponents()
        if node.identifier == .utcTime {
            let time = try UTCTime(derEncoded: node)
            (parts.year, parts.month, parts.day, parts.hour, parts.minute, parts.second) = (time.year, time.month, time.day, time.hours, time.minutes, time.seconds)
        } else {
            let time = try GeneralizedTime(derEncoded: node)
            (parts.year, parts.month, parts.day, parts.hour, parts.minute, parts.second) = (time.year, time.month, time.day, time.hours, time.minutes, time.seconds)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let date = calendar.date(from: parts) else { throw CertificateFactsError("a validity time is not a date") }
        return date
    }

    private static func children(of node: ASN1Node, _ what: String) throws -> [ASN1Node] {
        guard case .constructed(let nodes) = node.content else { throw CertificateFactsError("\(what) is not a constructed value") }
        return Array(nodes)
    }

    private static func firstOID(in node: ASN1Node, _ what: String) throws -> String {
        guard let first = try children(of: node, what).first else { throw CertificateFactsError("\(what) is empty") }
        return try ASN1ObjectIdentifier(derEncoded: first).description
    }

    /// The OIDs of the extensions in `[3] EXPLICIT Extensions`.
    private static func extensionOIDs(in explicit: ASN1Node) -> [String] {
        guard let sequence = (try? children(of: explicit, "extensions"))?.first,
            let extensions = try? children(of: sequence, "extensions")
        else { return [] }
        return extensions.compactMap { item in
            guard let oidNode = (try? children(of: item, "an extension"))?.first else { return nil }
            return (try? ASN1ObjectIdentifier(derEncoded: oidNode))?.description
        }
    }

    /// The first commonName (2.5.4.3) in a Name, as text.
    private static func commonName(in name: ASN1Node) -> String? {
        guard let sets = try? children(of: name, "a name") else { return nil }
        for set in sets {
            for attribute in (try? children(of: set, "a name part")) ?? [] {
                guard let pair = try? children(of: attribute, "an attribute"), pair.count == 2,
                    (try? ASN1ObjectIdentifier(derEncoded: pair[0]))?.description == "2.5.4.3",
                    case .primitive(let bytes) = pair[1].content
                else { continue }
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        return nil
    }
}

/// A certificate that could not be read, and where.
public struct CertificateFactsError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
