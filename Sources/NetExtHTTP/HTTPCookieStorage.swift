import Foundation

/// Cookies kept for a session (Foundation's `HTTPCookieStorage`): in this process's memory, or
/// in an app group's container shared by every process of the group
/// (``sharedCookieStorage(forGroupContainerIdentifier:)``). RFC 6265 §5.3 storage rules: a
/// cookie replaces the one of the same name, domain and path; expired ones are dropped; at most
/// 50 per domain and 3000 in all (§6.1), the oldest going first.
public final class HTTPCookieStorage: Sendable {
    /// The cookies when there is no file (a memory storage), guarded by `memoryLock`.
    nonisolated(unsafe) private var memory: [HTTPCookie] = []
    private let memoryLock = NSLock()
    /// The group's file, for a shared storage.
    private let file: CookieJarFile?
    static let perDomainLimit = 50
    static let totalLimit = 3000

    /// This process's cookies (what `.default` sessions use).
    public static let shared = HTTPCookieStorage()

    /// The app group whose container holds these cookies; nil for a storage in memory.
    public let groupContainerIdentifier: String?

    /// An empty storage in memory.
    public init() {
        file = nil
        groupContainerIdentifier = nil
    }

    private init(file: CookieJarFile, group: String) {
        self.file = file
        groupContainerIdentifier = group
    }

    /// The cookies of an app group, shared with the group's other processes through its
    /// container (``GroupContainer``).
    public static func sharedCookieStorage(forGroupContainerIdentifier identifier: String) throws(HTTPLoadError) -> HTTPCookieStorage {
        let directory = try GroupContainer.directory(for: identifier).appendingPathComponent("Library/Cookies")
        return HTTPCookieStorage(file: try CookieJarFile(directory: directory), group: identifier)
    }

    /// Every cookie not yet expired.
    public var cookies: [HTTPCookie] {
        let now = Date()
        return ((try? all()) ?? []).filter { !$0.isExpired(at: now) }
    }

    /// The cookies a request to `url` carries, most specific path first (§5.4 step 2).
    public func cookies(for url: URL) -> [HTTPCookie] {
        let jar = (try? all()) ?? []
        guard !jar.isEmpty, let host = url.host?.lowercased() else { return [] }
        let secure = url.scheme?.lowercased() == "https"
        let path = url.path.isEmpty ? "/" : url.path
        let now = Date()
        return jar
            .filter { !$0.isExpired(at: now) && $0.matches(host: Self.bare(host), path: path, secureChannel: secure) }
            .sorted { $0.path.count != $1.path.count ? $0.path.count > $1.path.count : $0.created < $1.created }
    }

    /// Stores `cookie` (replacing the one of the same name, domain and path).
    public func setCookie(_ cookie: HTTPCookie) { try? change { Self.insert(cookie, into: &$0) } }

    public func deleteCookie(_ cookie: HTTPCookie) { try? change { $0.removeAll { $0.replaces(cookie) } } }

    /// Drops the cookies without an expiry date.
    public func removeSessionCookies() { try? change { $0.removeAll(where: \.isSessionOnly) } }

    public func removeCookies(since date: Date) { try? change { $0.removeAll { $0.created >= date } } }

    /// The Set-Cookie fields of an answer from `url`, stored as §5.2–§5.3 say.
    func store(setCookieFields fields: [String], from url: URL) throws(HTTPLoadError) {
        guard !fields.isEmpty, let host = url.host?.lowercased() else { return }
        let secure = url.scheme?.lowercased() == "https"
        let path = url.path.isEmpty ? "/" : url.path
        let parsed = fields.compactMap { SetCookieParser.cookie(from: $0, host: Self.bare(host), path: path, secureChannel: secure) }
        guard !parsed.isEmpty else { return }
        try change { cookies in
            for cookie in parsed {
                // RFC 6265bis §5.7 step 16: a non-secure origin may not overwrite a Secure cookie.
                if !secure, cookies.contains(where: { $0.secure && $0.name == cookie.name && CookieRules.domainMatches($0.domain, cookie.domain) }) { continue }
                Self.insert(cookie, into: &cookies)
            }
        }
    }

    /// The Cookie header for a request (§5.4 step 4), nil when no cookie goes. Without a
    /// `mainDocumentURL` the request is same-site; with one on another site, SameSite=Strict
    /// cookies stay home, and Lax ones go only with GET/HEAD (RFC 6265bis §5.8.3).
    func cookieHeader(for url: URL, method: String, mainDocumentURL: URL?) -> String? {
        var chosen = cookies(for: url)
        if let mainDocumentURL, let host = url.host?.lowercased(), let siteHost = mainDocumentURL.host?.lowercased(), Self.site(host) != Self.site(siteHost) {
            let safe = method == "GET" || method == "HEAD"
            chosen.removeAll { $0.sameSite == .strict || ($0.sameSite == .lax && !safe) }
        }
        guard !chosen.isEmpty else { return nil }
        return chosen.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    // MARK: Storage

    private func all() throws(HTTPLoadError) -> [HTTPCookie] {
        if let file { return try file.read() }
        return memoryLock.withLock { memory }
    }

    private func change(_ body: (inout [HTTPCookie]) -> Void) throws(HTTPLoadError) {
        let now = Date()
        if let file {
            try file.update { jar in
                body(&jar)
                jar.removeAll { $0.isExpired(at: now) }
            }
        } else {
            memoryLock.withLock {
                body(&memory)
                memory.removeAll { $0.isExpired(at: now) }
            }
        }
    }

    private static func insert(_ cookie: HTTPCookie, into cookies: inout [HTTPCookie]) {
        var cookie = cookie
        if let old = cookies.first(where: { $0.replaces(cookie) }) { cookie.created = old.created }  // §5.3 step 11.3
        cookies.removeAll { $0.replaces(cookie) }
        cookies.append(cookie)
        // §6.1 limits, the oldest of the domain (then of all) evicted first.
        let sameDomain = cookies.filter { $0.domain == cookie.domain }
        if sameDomain.count > perDomainLimit, let oldest = sameDomain.min(by: { $0.created < $1.created }) { cookies.removeAll { $0.replaces(oldest) } }
        if cookies.count > totalLimit { cookies.sort { $0.created < $1.created }; cookies.removeFirst(cookies.count - totalLimit) }
    }

    /// A URL host without IPv6 brackets.
    private static func bare(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// The site of a host for SameSite: its last two labels (no public suffix list here, so
    /// "example.co.uk" and "other.co.uk" count as one site), the host itself for IP literals.
    static func site(_ host: String) -> String {
        if IPLiteral(host) != nil { return host }
        return host.split(separator: ".").suffix(2).joined(separator: ".")
    }
}
