/// The HTTP authentication scheme "PrivateToken" (RFC 9577 §2.1–§2.2):
/// `WWW-Authenticate: PrivateToken challenge="…", token-key="…"[, max-age=…]` and
/// `Authorization: PrivateToken token="…"`, values base64url.
public enum PrivateTokenHeader {
    public static let scheme = "PrivateToken"

    /// A challenge header value.
    public static func challenge(_ challenge: TokenChallenge, tokenKeyDER: [UInt8], maxAge: Int? = nil) -> String {
        var value = "\(scheme) challenge=\"\(Base64URL.encode(challenge.encoded()))\", token-key=\"\(Base64URL.encode(tokenKeyDER))\""
        if let maxAge { value += ", max-age=\(maxAge)" }
        return value
    }

    /// An authorization header value carrying one token.
    public static func authorization(_ token: PrivateToken) -> String {
        "\(scheme) token=\"\(Base64URL.encode(token.encoded()))\""
    }

    /// The challenges in a WWW-Authenticate value (several may be listed; other schemes are skipped).
    public static func parseChallenges(_ header: String) throws(PrivacyPassError) -> [(challenge: TokenChallenge, tokenKeyDER: [UInt8])] {
        var found: [(TokenChallenge, [UInt8])] = []
        for parameters in schemeParameters(header) {
            guard let challengeText = parameters["challenge"], let challengeBytes = Base64URL.decode(challengeText) else {
                throw .malformed(what: "WWW-Authenticate", reason: "PrivateToken without a base64url challenge parameter")
            }
            guard let keyText = parameters["token-key"], let key = Base64URL.decode(keyText) else {
                throw .malformed(what: "WWW-Authenticate", reason: "PrivateToken without a base64url token-key parameter")
            }
            found.append((try TokenChallenge(decoding: challengeBytes), key))
        }
        return found
    }

    /// The token in an Authorization value, or `nil` when it uses another scheme.
    public static func parseAuthorization(_ header: String) throws(PrivacyPassError) -> PrivateToken? {
        guard let parameters = schemeParameters(header).first else { return nil }
        guard let text = parameters["token"], let bytes = Base64URL.decode(text) else {
            throw .malformed(what: "Authorization", reason: "PrivateToken without a base64url token parameter")
        }
        return try PrivateToken(decoding: bytes)
    }

    /// Splits `Scheme a=1, b="2", Scheme c=3` into the parameter lists of each PrivateToken
    /// occurrence (auth-param names are case-insensitive; RFC 9110 §11.2).
    static func schemeParameters(_ header: String) -> [[String: String]] {
        var result: [[String: String]] = []
        var current: [String: String]?
        for rawItem in header.split(separator: ",") {
            var item = String(rawItem).trimmed(" \t")
            if let space = item.firstIndex(of: " "), !item[..<space].contains("=") {
                if let current { result.append(current) }
                let name = item[..<space]
                current = name.lowercased() == scheme.lowercased() ? [:] : nil
                item = String(item[item.index(after: space)...]).trimmed(" \t")
                if current == nil { continue }
            }
            guard current != nil, let equals = item.firstIndex(of: "=") else { continue }
            let key = String(item[..<equals]).trimmed(" \t").lowercased()
            var value = String(item[item.index(after: equals)...]).trimmed(" \t")
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            current?[key] = value
        }
        if let current { result.append(current) }
        return result
    }
}

extension String {
    func trimmed(_ set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}
