import Crypto
import Foundation
import NIOHTTP1
import Testing

@testable import NetExtHTTP

/// The loopback server's Digest side, written apart from the client's code: it reads the
/// `Authorization` field with its own parser and computes the expected response itself.
///
/// - `/digest` (GET, carol / "sw0rdfish"): offers SHA-512-256 (not answered), then SHA-256 with
///   qop=auth, then Basic. Its first nonce is `n-old`: a right answer with it gets a 401 saying
///   `stale=true` with nonce `n-new`; a right answer with `n-new` gets "welcome carol".
/// - `/digest-int` (POST): MD5-sess with qop=auth-int only, nonce `m-1`: the body is in the hash.
enum DigestLabServer {
    static let user = "carol", password = "sw0rdfish", realm = "lab@example.test"

    static func answer(_ request: HTTPRequestHead, body: [UInt8], headers: inout HTTPHeaders) -> (HTTPResponseStatus, String) {
        let integrity = request.uri == "/digest-int"
        let fields = request.headers.first(name: "authorization").flatMap(parse) ?? [:]
        let expectedNonce = integrity ? "m-1" : (fields["nonce"] == "n-new" ? "n-new" : "n-old")
        if let response = fields["response"], fields["username"] == user, fields["realm"] == realm, fields["uri"] == request.uri,
            fields["nonce"] == expectedNonce, fields["opaque"] == (integrity ? nil : "op\"q"),
            let cnonce = fields["cnonce"], let nc = fields["nc"], fields["qop"] == (integrity ? "auth-int" : "auth"),
            fields["algorithm"] == (integrity ? "MD5-sess" : "SHA-256"),
            response == expected(integrity: integrity, method: request.method.rawValue, uri: request.uri, nonce: expectedNonce, nc: nc, cnonce: cnonce, body: body) {
            if fields["nonce"] == "n-old" {
                headers.add(name: "WWW-Authenticate", value: "Digest realm=\"\(realm)\", qop=\"auth\", algorithm=SHA-256, nonce=\"n-new\", opaque=\"op\\\"q\", stale=true")
                return (.unauthorized, "stale")
            }
            return (.ok, "welcome \(user)")
        }
        if integrity {
            headers.add(name: "WWW-Authenticate", value: "Digest realm=\"\(realm)\", qop=\"auth-int\", algorithm=MD5-sess, nonce=\"m-1\"")
        } else {
            headers.add(name: "WWW-Authenticate", value: "Digest realm=\"\(realm)\", qop=\"auth, auth-int\", algorithm=SHA-512-256, nonce=\"x\"")
            headers.add(name: "WWW-Authenticate", value: "Digest realm=\"\(realm)\", qop=\"auth\", algorithm=SHA-256, nonce=\"n-old\", opaque=\"op\\\"q\", Basic realm=\"\(realm)\"")
        }
        return (.unauthorized, "who are you?")
    }

    static func expected(integrity: Bool, method: String, uri: String, nonce: String, nc: String, cnonce: String, body: [UInt8]) -> String {
        func md5(_ text: String) -> String { hex(Insecure.MD5.hash(data: Data(text.utf8))) }
        func sha256(_ text: String) -> String { hex(SHA256.hash(data: Data(text.utf8))) }
        if integrity {
            let ha1 = md5("\(md5("\(user):\(realm):\(password)")):\(nonce):\(cnonce)")
            let ha2 = md5("\(method):\(uri):\(hex(Insecure.MD5.hash(data: Data(body))))")
            return md5("\(ha1):\(nonce):\(nc):\(cnonce):auth-int:\(ha2)")
        }
        return sha256("\(sha256("\(user):\(realm):\(password)")):\(nonce):\(nc):\(cnonce):auth:\(sha256("\(method):\(uri)"))")
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// `Digest a="b", c=d, …` → [a: b, c: d]; quoted values unescaped.
    static func parse(_ value: String) -> [String: String]? {
        guard value.hasPrefix("Digest ") else { return nil }
        var fields: [String: String] = [:]
        var characters = Array(value.dropFirst(7))[...]
        while !characters.isEmpty {
            while characters.first == " " || characters.first == "," { characters = characters.dropFirst() }
            guard let equals = characters.firstIndex(of: "=") else { break }
            let name = String(characters[characters.startIndex..<equals]).trimmingCharacters(in: .whitespaces)
            characters = characters[(equals + 1)...]
            var text = ""
            if characters.first == "\"" {
                characters = characters.dropFirst()
                while let character = characters.first, character != "\"" {
                    characters = characters.dropFirst()
                    if character == "\\", let next = characters.first { text.append(next); characters = characters.dropFirst() } else { text.append(character) }
                }
                characters = characters.dropFirst()
            } else {
                while let character = characters.first, character != "," { text.append(character); characters = characters.dropFirst() }
            }
            fields[name] = text.trimmingCharacters(in: .whitespaces)
        }
        return fields
    }
}

@Suite("HTTP Digest authentication (RFC 7616)")
struct DigestAuthenticationTests {
    static func challenge(_ value: String) throws -> DigestChallenge {
        let parsed = try #require(HTTPChallenge.all(in: [value]).first)
        return try #require(DigestChallenge(parsed))
    }

    @Test("RFC 7616 §3.9.1: Mufasa's MD5 and SHA-256 responses")
    func rfcExamples() throws {
        let common = "realm=\"http-auth@example.org\", qop=\"auth, auth-int\", nonce=\"7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v\", opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\""
        let cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
        for (algorithm, response) in [("MD5", "8ca523f5e9506fed4657c9700eebdbec"), ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")] {
            let digest = try Self.challenge("Digest \(common), algorithm=\(algorithm)")
            #expect(digest.protection == .auth, "auth is chosen over auth-int")
            let field = digest.authorization(user: "Mufasa", password: "Circle of Life", method: "GET", uri: "/dir/index.html", body: Data(), count: 1, clientNonce: cnonce)
            let fields = try #require(DigestLabServer.parse(field))
            #expect(fields["response"] == response, "\(algorithm)")
            #expect(fields["username"] == "Mufasa" && fields["nc"] == "00000001" && fields["qop"] == "auth" && fields["cnonce"] == cnonce)
            #expect(fields["opaque"] == "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS" && fields["algorithm"] == algorithm && fields["uri"] == "/dir/index.html")
        }
    }

    @Test("challenges: the first Digest the session can answer, Basic only without one; what it cannot answer is passed over")
    func choosing() throws {
        let chosen = try #require(HTTPAuthentication.choose(in: ["Digest realm=\"a\", nonce=\"1\", algorithm=SHA-512-256", "Basic realm=\"b\", Digest realm=\"c\", nonce=\"2\", algorithm=sha-256-SESS"]))
        #expect(chosen.method == .httpDigest && chosen.realm == "c" && chosen.digest?.algorithm == .sha256Session)
        #expect(HTTPAuthentication.choose(in: ["Digest realm=\"a\", nonce=\"1\", qop=\"auth-conf\"", "Basic realm=b"])?.method == .httpBasic, "an unknown qop alone")
        #expect(HTTPAuthentication.choose(in: ["Digest realm=\"a\"", "Basic"])?.method == .httpBasic, "no nonce")
        #expect(HTTPAuthentication.choose(in: ["Bearer realm=\"x\"", "Negotiate YII="]) == nil)
        let plain = try Self.challenge("Digest realm=\"r\", nonce=\"n\"")
        #expect(plain.algorithm == .md5 && plain.protection == nil && !plain.stale && !plain.userhash)
        // RFC 2069's form without qop: no nc, cnonce or qop in the answer.
        let old = try #require(DigestLabServer.parse(plain.authorization(user: "u", password: "p", method: "GET", uri: "/", body: Data(), count: 1, clientNonce: "c")))
        #expect(old["nc"] == nil && old["cnonce"] == nil && old["qop"] == nil)
        #expect(try Self.challenge("Digest realm=\"r\", nonce=\"n\", stale=TRUE").stale)
    }

    @Test("userhash and a user name a quoted string cannot carry (RFC 7616 §3.4.4)")
    func userNames() throws {
        let hashed = try Self.challenge("Digest realm=\"r\", nonce=\"n\", algorithm=SHA-256, userhash=true")
        let fields = try #require(DigestLabServer.parse(hashed.authorization(user: "Jäsøn Doe", password: "p", method: "GET", uri: "/", body: Data(), count: 1, clientNonce: "c")))
        #expect(fields["username"] == DigestLabServer.hex(SHA256.hash(data: Data("Jäsøn Doe:r".utf8))) && fields["userhash"] == "true")
        let plain = try Self.challenge("Digest realm=\"r\", nonce=\"n\"")
        let field = plain.authorization(user: "Jäsøn Doe", password: "p", method: "GET", uri: "/", body: Data(), count: 1, clientNonce: "c")
        #expect(field.contains("username*=UTF-8''J%C3%A4s%C3%B8n%20Doe"), "\(field)")
    }

    @Test("damaged or hostile challenge fields never crash the reader and answer nothing they should not")
    func fuzzedChallenges() {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["Digest", "Basic", " ", ",", "=", "\"", "\\", "realm", "nonce", "qop", "auth", "algorithm", "MD5", "SHA-256", "stale", "true", "x", "é"]
        for _ in 0..<2_000 {
            let value = (0..<Int.random(in: 0...24, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            if let chosen = HTTPAuthentication.choose(in: [value]), let digest = chosen.digest {
                #expect(!digest.nonce.isEmpty)
                _ = digest.authorization(user: "u", password: "p", method: "GET", uri: "/", body: Data(), count: 1, clientNonce: "c")
            }
        }
    }

    func session(_ delegate: any NetExtHTTP.URLSessionDelegate) -> NetExtHTTP.URLSession { loopbackSession(delegate) }

    @Test("a server offering Digest: the delegate is asked once for the SHA-256 challenge, a stale nonce is answered again unasked, the load succeeds")
    func digestLoad() async throws {
        let server = try await LoopbackHTTPServer()
        let answerer = ChallengeAnswerer([(.useCredential, URLCredential(user: DigestLabServer.user, password: DigestLabServer.password))])
        let (data, response) = try await session(answerer).data(from: URL(string: "http://127.0.0.1:\(server.port)/digest")!)
        #expect(response.statusCode == 200 && String(decoding: data, as: UTF8.self) == "welcome carol")
        let seen = answerer.seen.withLock { $0 }
        #expect(seen.count == 1, "the stale nonce was answered without asking again")
        #expect(seen.first?.protectionSpace == URLProtectionSpace(host: "127.0.0.1", port: server.port, protocol: "http", realm: DigestLabServer.realm, authenticationMethod: .httpDigest))
        try await server.close()
    }

    @Test("a wrong password is asked about again with the failure counted; auth-int with MD5-sess hashes the body sent")
    func digestFailuresAndIntegrity() async throws {
        let server = try await LoopbackHTTPServer()
        let wrong = ChallengeAnswerer([(.useCredential, URLCredential(user: "carol", password: "guess")), (.performDefaultHandling, nil)])
        #expect(try await session(wrong).data(from: URL(string: "http://127.0.0.1:\(server.port)/digest")!).1.statusCode == 401)
        #expect(wrong.seen.withLock { $0.map(\.previousFailureCount) } == [0, 1])
        let right = ChallengeAnswerer([(.useCredential, URLCredential(user: DigestLabServer.user, password: DigestLabServer.password))])
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/digest-int")!)
        request.httpMethod = "POST"
        let (data, response) = try await session(right).upload(for: request, from: Data("the body counts".utf8))
        #expect(response.statusCode == 200 && String(decoding: data, as: UTF8.self) == "welcome carol")
        try await server.close()
    }
}

@Suite("URLCredentialStorage")
struct CredentialStorageTests {
    static let space = URLProtectionSpace(host: "Lab.Example", port: 443, protocol: "https", realm: "lab", authenticationMethod: .httpDigest)

    @Test("credentials by space and user; the first is the default until another is made it; .none and trust are never kept")
    func storage() {
        let storage = URLCredentialStorage()
        storage.set(URLCredential(user: "carol", password: "a"), for: Self.space)
        storage.set(URLCredential(user: "dave", password: "b"), for: Self.space)
        var lower = Self.space
        lower.host = "lab.example"
        #expect(storage.defaultCredential(for: lower)?.user == "carol", "hosts in any case are one space")
        storage.setDefaultCredential(URLCredential(user: "dave", password: "b2"), for: Self.space)
        #expect(storage.defaultCredential(for: Self.space) == URLCredential(user: "dave", password: "b2"))
        #expect(storage.credentials(for: Self.space)?.keys.sorted() == ["carol", "dave"])
        var otherRealm = Self.space
        otherRealm.realm = "elsewhere"
        #expect(storage.credentials(for: otherRealm) == nil)
        storage.set(URLCredential(user: "eve", password: "c", persistence: .none), for: otherRealm)
        storage.set(URLCredential(trust: ServerTrust(host: "x", certificates: [], evaluationFailure: nil)), for: otherRealm)
        #expect(storage.credentials(for: otherRealm) == nil)
        storage.remove(URLCredential(user: "dave", password: ""), for: Self.space)
        #expect(storage.defaultCredential(for: Self.space) == nil && storage.allCredentials[lower]?.keys.sorted() == ["carol"])
        #expect(!URLCredential(user: "carol", password: "secret").description.contains("secret"))
    }

    @Test("a credential written before persistence existed reads as .forSession")
    func olderEncoding() throws {
        let credential = try JSONDecoder().decode(URLCredential.self, from: Data(#"{"user": "u", "password": "p"}"#.utf8))
        #expect(credential.persistence == .forSession && credential.trust == nil)
    }

    func configuration(_ storage: URLCredentialStorage) -> NetExtHTTP.URLSessionConfiguration {
        var configuration = NetExtHTTP.URLSessionConfiguration.ephemeral
        configuration.appTransportSecurity.allowsLocalNetworking = true
        configuration.urlFilter = nil
        configuration.urlCredentialStorage = storage
        return configuration
    }

    @Test("a credential the server accepted is kept: another session of the storage answers with it, proposed to its delegate; a refused stored one is sent once")
    func sessionsShareStorage() async throws {
        let server = try await LoopbackHTTPServer()
        let url = URL(string: "http://127.0.0.1:\(server.port)/digest")!
        let storage = URLCredentialStorage()
        let right = URLCredential(user: DigestLabServer.user, password: DigestLabServer.password)
        let once = ChallengeAnswerer([(.useCredential, URLCredential(user: right.user, password: right.password, persistence: .none))])
        #expect(try await NetExtHTTP.URLSession(configuration: configuration(storage), delegate: once).data(from: url).1.statusCode == 200)
        #expect(storage.allCredentials.isEmpty, "persistence .none is not kept")
        #expect(try await NetExtHTTP.URLSession(configuration: configuration(storage)).data(from: url).1.statusCode == 401)

        let kept = ChallengeAnswerer([(.useCredential, right)])
        #expect(try await NetExtHTTP.URLSession(configuration: configuration(storage), delegate: kept).data(from: url).1.statusCode == 200)
        let space = URLProtectionSpace(host: "127.0.0.1", port: server.port, protocol: "http", realm: DigestLabServer.realm, authenticationMethod: .httpDigest)
        #expect(storage.defaultCredential(for: space) == right)

        #expect(try await NetExtHTTP.URLSession(configuration: configuration(storage)).data(from: url).1.statusCode == 200, "no delegate: the stored credential")
        let deferring = ChallengeAnswerer([])
        #expect(try await NetExtHTTP.URLSession(configuration: configuration(storage), delegate: deferring).data(from: url).1.statusCode == 200)
        #expect(deferring.seen.withLock { $0.first?.proposedCredential } == right)

        storage.setDefaultCredential(URLCredential(user: "carol", password: "stale password"), for: space)
        let before = server.requests.load(ordering: .relaxed)
        #expect(try await NetExtHTTP.URLSession(configuration: configuration(storage)).data(from: url).1.statusCode == 401)
        #expect(server.requests.load(ordering: .relaxed) - before == 2, "the challenge, then the stored credential once")
        try await server.close()
    }
}
