import Foundation

/// A cookie as RFC 6265 §5.3 stores it (with SameSite, RFC 6265bis §5.4.7).
public struct HTTPCookie: Sendable, Hashable, Codable {
    public enum SameSite: String, Sendable, Hashable, Codable {
        case unspecified, none, lax, strict
    }

    public var name: String
    public var value: String
    /// Lower case, no leading dot.
    public var domain: String
    /// Sent to `domain` only, not its subdomains (the Set-Cookie had no Domain attribute).
    public var hostOnly: Bool
    public var path: String
    /// nil: a session cookie (§5.3 step 3, "persistent-flag false"). A memory storage loses it
    /// with its process; a group's file keeps it until ``HTTPCookieStorage/removeSessionCookies()``.
    public var expires: Date?
    public var secure: Bool
    public var httpOnly: Bool
    public var sameSite: SameSite
    public var created: Date

    public init(
        name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/", expires: Date? = nil,
        secure: Bool = false, httpOnly: Bool = false, sameSite: SameSite = .unspecified, created: Date = Date()
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.hostOnly = hostOnly
        self.path = path
        self.expires = expires
        self.secure = secure
        self.httpOnly = httpOnly
        self.sameSite = sameSite
        self.created = created
    }

    public var isSessionOnly: Bool { expires == nil }

    func isExpired(at now: Date) -> Bool { expires.map { $0 <= now } ?? false }

    /// The same cookie for storage's purposes (§5.3 step 11): name, domain and path.
    func replaces(_ other: HTTPCookie) -> Bool { name == other.name && domain == other.domain && path == other.path }

    /// Whether it goes with a request to `host` and `path` over a secure channel or not (§5.4 step 1).
    func matches(host: String, path requestPath: String, secureChannel: Bool) -> Bool {
        if secure && !secureChannel { return false }
        let hostMatches = hostOnly ? host == domain : CookieRules.domainMatches(host, domain)
        return hostMatches && CookieRules.pathMatches(requestPath, path)
    }
}

/// RFC 6265 §5.1.3–§5.1.4 matching rules.
enum CookieRules {
    /// §5.1.3: identical, or `host` ends with "." + `domain` and is a name, not an IP address.
    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        return host.hasSuffix("." + domain) && IPLiteral(host) == nil
    }

    /// §5.1.4: the cookie path is a prefix of the request path at a "/" boundary.
    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).first == "/"
    }

    /// §5.1.4 default-path: the request path up to, not including, its last "/" ("/" when that
    /// leaves nothing or the path does not start with "/").
    static func defaultPath(_ requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let last = requestPath.lastIndex(of: "/"), last != requestPath.startIndex else { return "/" }
        return String(requestPath[..<last])
    }
}
