import Foundation
import Testing

@testable import NetExtHTTP

@Suite("Set-Cookie as RFC 6265 §5.2 reads it")
struct SetCookieParserTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func parse(_ field: String, host: String = "www.example.com", path: String = "/docs/page", secure: Bool = true) -> HTTPCookie? {
        SetCookieParser.cookie(from: field, host: host, path: path, secureChannel: secure, now: now)
    }

    @Test("RFC 6265 §3.1's examples")
    func examples() throws {
        let sid = try #require(parse("SID=31d4d96e407aad42; Path=/; Secure; HttpOnly"))
        #expect(sid.name == "SID" && sid.value == "31d4d96e407aad42" && sid.path == "/" && sid.secure && sid.httpOnly && sid.hostOnly && sid.isSessionOnly)
        let lang = try #require(parse("lang=en-US; Path=/; Domain=example.com"))
        #expect(lang.domain == "example.com" && !lang.hostOnly)
        let gone = try #require(parse("lang=; Expires=Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(gone.isExpired(at: now))
    }

    @Test("the three date formats of the web, and Max-Age over Expires", arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
    ])
    func dates(_ text: String) throws {
        #expect(CookieDate.parse(text) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("Max-Age wins over Expires, is capped at 400 days, and 0 means expired")
    func maxAge() throws {
        let cookie = try #require(parse("a=1; Expires=Sun, 06 Nov 1994 08:49:37 GMT; Max-Age=60"))
        #expect(cookie.expires == now.addingTimeInterval(60))
        #expect(try #require(parse("a=1; Max-Age=999999999")).expires == now.addingTimeInterval(400 * 86_400))
        #expect(try #require(parse("a=1; Max-Age=0")).isExpired(at: now))
        #expect(try #require(parse("a=1; Max-Age=soon")).isSessionOnly)
        #expect(CookieDate.parse("31 Feb 2030 00:00:00") == nil && CookieDate.parse("no date") == nil)
    }

    @Test("default path is the request's directory")
    func defaultPath() throws {
        #expect(try #require(parse("a=1")).path == "/docs")
        #expect(try #require(parse("a=1", path: "/")).path == "/")
        #expect(try #require(parse("a=1; Path=relative")).path == "/docs")
    }

    @Test("refused: a foreign or bare-suffix domain, Secure from http, SameSite=None without Secure, prefixes broken, no '='")
    func refusals() {
        #expect(parse("a=1; Domain=other.com") == nil)
        #expect(parse("a=1; Domain=com") == nil)
        #expect(parse("a=1; Domain=www.example.com.evil") == nil)
        #expect(parse("a=1; Secure", secure: false) == nil)
        #expect(parse("a=1; SameSite=None") == nil)
        #expect(parse("__Secure-a=1") == nil)
        #expect(parse("__Host-a=1; Secure; Path=/; Domain=example.com") == nil)
        #expect(parse("__Host-a=1; Secure; Path=/") != nil)
        #expect(parse("novalue") == nil)
        #expect(parse("=1") == nil)
        #expect(parse("a=\u{1}1") == nil)
        #expect(parse("a=" + String(repeating: "x", count: 5000)) == nil)
        #expect(parse("a=1; Domain=10.0.0.1", host: "10.0.0.1")?.hostOnly == true)
    }

    @Test("random fields never trap")
    func fuzz() {
        var generator = SeededGenerator(seed: 6265)
        let pieces = ["a=1", ";", " ", "Path=/", "Domain=", "example.com", "Max-Age=", "-5", "Expires=", "Sun, 06 Nov 1994 08:49:37 GMT", "Secure", "=", "SameSite=Lax", "\u{7F}", "ä", "__Host-"]
        for _ in 0..<5000 {
            let field = (0..<Int.random(in: 0..<10, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            _ = parse(field)
            _ = CookieDate.parse(field)
        }
    }
}

@Suite("Cookie storage")
struct HTTPCookieStorageTests {
    @Test("matching by host, domain, path and scheme; most specific path first")
    func matching() throws {
        let storage = HTTPCookieStorage()
        try storage.store(setCookieFields: ["host=1", "wide=2; Domain=example.com; Path=/", "deep=3; Path=/docs/a", "secret=4; Secure; Path=/"], from: URL(string: "https://www.example.com/docs/a/page")!)
        // host=1's default path is /docs/a (the request's directory), as long as deep=3's: the
        // older goes first (§5.4 step 2).
        #expect(storage.cookieHeader(for: URL(string: "https://www.example.com/docs/a/b")!, method: "GET", mainDocumentURL: nil) == "host=1; deep=3; wide=2; secret=4")
        #expect(storage.cookieHeader(for: URL(string: "http://www.example.com/docs/a/b")!, method: "GET", mainDocumentURL: nil) == "host=1; deep=3; wide=2")
        #expect(storage.cookies(for: URL(string: "https://api.example.com/")!).map(\.name) == ["wide"])
        #expect(storage.cookies(for: URL(string: "https://www.example.com/docsy")!).map(\.name).sorted() == ["secret", "wide"])
        #expect(storage.cookies(for: URL(string: "https://example.org/")!).isEmpty)
    }

    @Test("a cookie replaces its namesake (keeping its creation time); Max-Age=0 deletes; http cannot overwrite a Secure one")
    func replacement() throws {
        let storage = HTTPCookieStorage()
        let url = URL(string: "https://example.com/")!
        try storage.store(setCookieFields: ["a=1; Secure"], from: url)
        let created = try #require(storage.cookies.first).created
        try storage.store(setCookieFields: ["a=2; Secure"], from: url)
        #expect(storage.cookies.map(\.value) == ["2"] && storage.cookies.first?.created == created)
        try storage.store(setCookieFields: ["a=3"], from: URL(string: "http://example.com/")!)
        #expect(storage.cookies.map(\.value) == ["2"])
        try storage.store(setCookieFields: ["a=; Max-Age=0; Secure"], from: url)
        #expect(storage.cookies.isEmpty)
    }

    @Test("SameSite: Strict stays home on cross-site loads, Lax goes with GET only")
    func sameSite() throws {
        let storage = HTTPCookieStorage()
        try storage.store(setCookieFields: ["s=1; SameSite=Strict", "l=2; SameSite=Lax", "n=3; SameSite=None; Secure", "u=4"], from: URL(string: "https://shop.example/")!)
        let url = URL(string: "https://shop.example/cart")!
        #expect(storage.cookieHeader(for: url, method: "POST", mainDocumentURL: URL(string: "https://www.shop.example/")) == "s=1; l=2; n=3; u=4")
        #expect(storage.cookieHeader(for: url, method: "GET", mainDocumentURL: URL(string: "https://evil.example/")) == "l=2; n=3; u=4")
        #expect(storage.cookieHeader(for: url, method: "POST", mainDocumentURL: URL(string: "https://evil.example/")) == "n=3; u=4")
    }

    @Test("no more than 50 cookies per domain: the oldest goes")
    func limits() throws {
        let storage = HTTPCookieStorage()
        for index in 0..<60 { storage.setCookie(HTTPCookie(name: "c\(index)", value: "v", domain: "example.com", created: Date(timeIntervalSince1970: Double(index)))) }
        #expect(storage.cookies.count == 50 && !storage.cookies.contains { $0.name == "c0" } && storage.cookies.contains { $0.name == "c59" })
    }

    @Test("a group's storages (as two processes would open them) share cookies; another group's do not")
    func groups() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("groups-\(UUID())")
        setenv("NETEXT_GROUP_CONTAINERS", root.path, 1)
        defer { unsetenv("NETEXT_GROUP_CONTAINERS"); try? FileManager.default.removeItem(at: root) }
        let first = try HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "group.com.example.app")
        let second = try HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "group.com.example.app")
        let other = try HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "group.com.example.other")
        try first.store(setCookieFields: ["token=abc; Max-Age=600; Secure; HttpOnly"], from: URL(string: "https://api.example.com/login")!)
        #expect(second.cookieHeader(for: URL(string: "https://api.example.com/")!, method: "GET", mainDocumentURL: nil) == "token=abc")
        #expect(other.cookies.isEmpty)
        let file = root.appendingPathComponent("group.com.example.app/Library/Cookies/cookies.json").path
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // A damaged file is reported, naming it, and not overwritten by reads.
        try Data("not json".utf8).write(to: URL(fileURLWithPath: file))
        do {
            try second.store(setCookieFields: ["b=1"], from: URL(string: "https://api.example.com/")!)
            Issue.record("stored into a damaged file")
        } catch {
            #expect(error.description.contains("the cookie file \(file) is not a cookie list"))
        }
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "not json")
        #expect(throws: HTTPLoadError.self) { try HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "../escape") }
    }
}
