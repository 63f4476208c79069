import Crypto
import Foundation

/// A Digest challenge the session can answer (RFC 7616 §3.3): its realm, nonce, opaque value,
/// algorithm and quality of protection.
struct DigestChallenge: Equatable {
    /// The hash algorithms answered (RFC 7616 §6.1). SHA-512-256 is not: a challenge naming it is
    /// passed over for another the server offered.
    enum Algorithm: String, Equatable {
        case md5 = "MD5", md5Session = "MD5-sess", sha256 = "SHA-256", sha256Session = "SHA-256-sess"

        var isSession: Bool { self == .md5Session || self == .sha256Session }

        /// Lowercase hex of the hash of `text`'s UTF-8 bytes.
        func hash(_ text: String) -> String { hash(Data(text.utf8)) }

        func hash(_ bytes: Data) -> String {
            switch self {
            case .md5, .md5Session: Insecure.MD5.hash(data: bytes).hexText
            case .sha256, .sha256Session: SHA256.hash(data: bytes).hexText
            }
        }
    }

    /// `auth` (the request line), `auth-int` (the body too), or none (RFC 2069's older form).
    enum Protection: String, Equatable { case auth, authInt = "auth-int" }

    var realm: String
    var nonce: String
    var opaque: String?
    var algorithm: Algorithm
    var protection: Protection?
    /// The server asks for the user name hashed (§3.4.4).
    var userhash: Bool
    /// The server's previous nonce was only stale: the same credential goes again (§3.3).
    var stale: Bool

    /// Nil when the challenge lacks a realm or nonce, names an algorithm not answered, or offers
    /// only protections not known.
    init?(_ challenge: HTTPChallenge) {
        guard challenge.scheme.lowercased() == "digest", let realm = challenge.parameters["realm"], let nonce = challenge.parameters["nonce"], !nonce.isEmpty else {
            return nil
        }
        let algorithmName = challenge.parameters["algorithm"] ?? "MD5"
        guard let algorithm = [Algorithm.md5, .md5Session, .sha256, .sha256Session].first(where: { $0.rawValue.lowercased() == algorithmName.lowercased() }) else {
            return nil
        }
        if let offered = challenge.parameters["qop"] {
            let protections = offered.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            if protections.contains("auth") {
                protection = .auth
            } else if protections.contains("auth-int") {
                protection = .authInt
            } else {
                return nil
            }
        } else {
            protection = nil
        }
        self.realm = realm
        self.nonce = nonce
        self.algorithm = algorithm
        opaque = challenge.parameters["opaque"]
        userhash = challenge.parameters["userhash"]?.lowercased() == "true"
        stale = challenge.parameters["stale"]?.lowercased() == "true"
    }

    /// The `Authorization` field's value answering this challenge (RFC 7616 §3.4) for a request
    /// of `method` to `uri` (its request target, as on the request line) with `body` (for
    /// `auth-int`), the `nc`-th use of the nonce, and a client nonce.
    func authorization(user: String, password: String, method: String, uri: String, body: Data, count: Int, clientNonce: String) -> String {
        let nc = String(String(count, radix: 16).suffix(8)).leftPadded(to: 8)
        var secret = algorithm.hash("\(user):\(realm):\(password)")
        if algorithm.isSession { secret = algorithm.hash("\(secret):\(nonce):\(clientNonce)") }
        let requestHash = protection == .authInt
            ? algorithm.hash("\(method):\(uri):\(algorithm.hash(body))")
            : algorithm.hash("\(method):\(uri)")
        let response = protection.map { algorithm.hash("\(secret):\(nonce):\(nc):\(clientNonce):\($0.rawValue):\(requestHash)") }
            ?? algorithm.hash("\(secret):\(nonce):\(requestHash)")
        var fields: [String] = []
        if userhash {
            fields.append("username=\"\(algorithm.hash("\(user):\(realm)"))\"")
        } else if user.unicodeScalars.allSatisfy({ $0.isASCII && $0 != "\"" && $0 != "\\" && $0.value >= 0x20 && $0.value != 0x7f }) {
            fields.append("username=\"\(user)\"")
        } else {
            // RFC 7616 §3.4.4: a name a quoted string cannot carry goes as an RFC 8187 extended value.
            fields.append("username*=UTF-8''\(Self.extendedValue(user))")
        }
        fields.append("realm=\(Self.quoted(realm))")
        fields.append("uri=\(Self.quoted(uri))")
        fields.append("algorithm=\(algorithm.rawValue)")
        fields.append("nonce=\(Self.quoted(nonce))")
        if let protection {
            fields.append("nc=\(nc)")
            fields.append("cnonce=\(Self.quoted(clientNonce))")
            fields.append("qop=\(protection.rawValue)")
        }
        fields.append("response=\"\(response)\"")
        if let opaque { fields.append("opaque=\(Self.quoted(opaque))") }
        if userhash { fields.append("userhash=true") }
        return "Digest " + fields.joined(separator: ", ")
    }

    /// A fresh client nonce: 16 random bytes in hex.
    static func makeClientNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// RFC 8187 §3.2.1's value-chars: attr-char as is, every other byte %XX.
    static func extendedValue(_ text: String) -> String {
        let plain = Set("!#$&+-.^_`|~".utf8)
        return text.utf8.map { byte in
            let isAlphanumeric = (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
            return isAlphanumeric || plain.contains(byte) ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }.joined()
    }
}

extension Sequence where Element == UInt8 {
    fileprivate var hexText: String { map { String($0, radix: 16).leftPadded(to: 2) }.joined() }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
