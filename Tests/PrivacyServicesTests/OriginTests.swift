import Foundation
import HTTPServing
import Logging
import PrivacyPass
import Synchronization
import Testing
@testable import PrivacyServices
@testable import URLFilter

@Suite("Privacy Pass at the origin")
struct OriginTests {
    /// An origin that only answers requests carrying a valid token.
    struct ProtectedTarget: HTTPResponder {
        let verifier: PrivateTokenVerifier
        func bodyLimit(method: String, path: String) -> Int { 1 << 20 }
        func endpointLabel(path: String) -> String { "any" }
        /// As the PIR server's responder: the head is checked before the body is read.
        func admit(method: String, path: String, headers: [(name: String, value: String)]) -> HTTPServerResponse? {
            verifier.precheck(headers: headers)
        }
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
            if let refusal = await verifier.authorize(request) { return refusal }
            return .text(200, "welcome")
        }
    }

    static func verifier(issuer: IssuerTests.Issuer, storePath: String?, origin: String = "pir.test") throws -> PrivateTokenVerifier {
        PrivateTokenVerifier(issuerName: "127.0.0.1", originName: origin, directoryURL: issuer.served.url(IssuerDirectory.wellKnownPath),
                             spent: try SpentTokenStore(path: storePath), fetchTimeout: testClientTimeout, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
    }

    static func get(_ url: URL, authorization: String? = nil) async throws -> ServiceResponse {
        var request = ServiceRequest(method: "GET", url: url)
        if let authorization { request.headers.append(("Authorization", authorization)) }
        return try await DirectTransport(timeout: testClientTimeout).send(request)
    }

    @Test func challengesVerifiesAndRefusesDoubleSpendingAcrossRestarts() async throws {
        let issuer = try await IssuerTests.Issuer.start()
        defer { Task { await issuer.stop() } }
        let storePath = issuer.directory.path + "/spent.sqlite"
        let verifier = try Self.verifier(issuer: issuer, storePath: storePath)
        let origin = try await Served.start(ProtectedTarget(verifier: verifier))
        defer { Task { await origin.stop() } }

        let challenged = try await Self.get(origin.url("/queries"))
        #expect(challenged.status == 401)
        let header = try #require(challenged.header("WWW-Authenticate"))
        let offered = try PrivateTokenHeader.parseChallenges(header)
        #expect(offered.count == 1)
        #expect(offered[0].challenge == TokenChallenge(issuerName: "127.0.0.1", originInfo: ["pir.test"]))
        #expect(offered[0].tokenKeyDER == issuer.ring.keys[0].key.publicKeyDER)

        let client = issuer.client(store: try PrivateTokenStore(path: nil), batch: 2)
        let token = try await client.token(for: offered[0].challenge, tokenKeyDER: offered[0].tokenKeyDER)
        let authorization = PrivateTokenHeader.authorization(token)
        #expect(try await Self.get(origin.url("/queries"), authorization: authorization).status == 200)
        let again = try await Self.get(origin.url("/queries"), authorization: authorization)
        #expect(again.status == 401)
        #expect(again.message == "this token was already redeemed")
        #expect(verifier.outcomes["accepted"] == 1 && verifier.outcomes["spent"] == 1)

        // A restarted origin still knows the token was spent.
        let restarted = try await Served.start(ProtectedTarget(verifier: try Self.verifier(issuer: issuer, storePath: storePath)))
        defer { Task { await restarted.stop() } }
        #expect(try await Self.get(restarted.url("/"), authorization: authorization).status == 401)
        let second = try await client.token(for: offered[0].challenge, tokenKeyDER: offered[0].tokenKeyDER)
        #expect(try await Self.get(restarted.url("/"), authorization: PrivateTokenHeader.authorization(second)).status == 200)
    }

    @Test func refusesTokensForOtherOriginsForgedOrMalformed() async throws {
        let issuer = try await IssuerTests.Issuer.start()
        defer { Task { await issuer.stop() } }
        let verifier = try Self.verifier(issuer: issuer, storePath: nil)
        let origin = try await Served.start(ProtectedTarget(verifier: verifier))
        defer { Task { await origin.stop() } }
        let key = issuer.ring.keys[0].key.publicKeyDER
        let client = issuer.client(store: try PrivateTokenStore(path: nil), batch: 1)
        let elsewhere = try await client.token(for: TokenChallenge(issuerName: "127.0.0.1", originInfo: ["other.test"]), tokenKeyDER: key)
        let refused = try await Self.get(origin.url("/"), authorization: PrivateTokenHeader.authorization(elsewhere))
        #expect(refused.status == 401, "\(refused.status) \(refused.message); directory fetch failures: \(verifier.consecutiveFetchFailures)")
        var forged = try await client.token(for: TokenChallenge(issuerName: "127.0.0.1", originInfo: ["pir.test"]), tokenKeyDER: key)
        forged.authenticator[17] ^= 1
        #expect(try await Self.get(origin.url("/"), authorization: PrivateTokenHeader.authorization(forged)).status == 401)
        let malformed = try await Self.get(origin.url("/"), authorization: "PrivateToken token=\"AAAA\"")
        #expect(malformed.status == 401)
        #expect(malformed.message.contains("token"))
        #expect(try await Self.get(origin.url("/"), authorization: "Bearer something").status == 401)
        #expect(verifier.outcomes["accepted"] == nil)
    }

    @Test func issuerUnreachableMeans503NotOpenDoors() async throws {
        let logs = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let verifier = PrivateTokenVerifier(issuerName: "issuer.test", originName: "pir.test", directoryURL: URL(string: "http://127.0.0.1:9/.well-known/x")!,
                                            spent: try SpentTokenStore(path: nil), logger: logs)
        let refusal = await verifier.authorize(HTTPServerRequest(method: "POST", path: "/queries"))
        #expect(refusal?.status == 503)
    }

    @Test func spentStoreKeepsNoncesUntilTheirKeyExpires() throws {
        let store = try SpentTokenStore(path: nil)
        let a = [UInt8](repeating: 1, count: 32), b = [UInt8](repeating: 2, count: 32)
        #expect(try store.observeKeys(listed: [a, b], retention: 100, now: 1000).added == 2)
        #expect(try store.spend(nonce: [1], keyID: a, now: 1000))
        #expect(try store.spend(nonce: [2], keyID: b, now: 1000))
        #expect(try !store.spend(nonce: [1], keyID: a, now: 1001))
        #expect(try store.spend(nonce: [1], keyID: b, now: 1001))

        // a leaves the directory: retired, its nonce kept; it comes back: still spent.
        #expect(try store.observeKeys(listed: [b], retention: 100, now: 1010).retired == 1)
        #expect(store.count == 3)
        let back = try store.observeKeys(listed: [a, b], retention: 100, now: 1050)
        #expect(back.restored == 1 && back.acceptable == [a, b])
        #expect(try !store.spend(nonce: [1], keyID: a, now: 1050))

        // Retired for the whole retention: its nonces go, and it is refused for good.
        _ = try store.observeKeys(listed: [b], retention: 100, now: 1060)
        #expect(try store.observeKeys(listed: [b], retention: 100, now: 1159).expired == 0)
        let expired = try store.observeKeys(listed: [b], retention: 100, now: 1160)
        #expect(expired.expired == 1 && expired.forgottenNonces == 1)
        #expect(store.count == 2)
        #expect(try store.observeKeys(listed: [a, b], retention: 100, now: 1200).acceptable == [b])
        #expect(try !store.spend(nonce: [9], keyID: a, now: 1200))
    }

    @Test func spentStoreKeepsRetirementsAcrossRestarts() throws {
        let directory = NSTemporaryDirectory() + "netext-spent-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = [UInt8](repeating: 7, count: 32)
        do {
            let store = try SpentTokenStore(path: directory + "/spent.sqlite")
            #expect(try store.spend(nonce: [1], keyID: key, now: 10))
            _ = try store.observeKeys(listed: [], retention: 100, now: 20)
        }
        let reopened = try SpentTokenStore(path: directory + "/spent.sqlite")
        #expect(try !reopened.spend(nonce: [1], keyID: key, now: 30))
        // Retired at 20 before the restart: expires at 120, not 100 after the restart.
        #expect(try reopened.observeKeys(listed: [], retention: 100, now: 119).expired == 0)
        #expect(try reopened.observeKeys(listed: [], retention: 100, now: 120).expired == 1)
    }

    /// An issuer directory the test rewrites between fetches, counting them.
    final class ScriptedDirectory: HTTPResponder, @unchecked Sendable {
        struct Script { var status = 200; var keys: [IssuerDirectory.TokenKey] = []; var fetches = 0 }
        let script = Mutex(Script())
        func bodyLimit(method: String, path: String) -> Int { 0 }
        func endpointLabel(path: String) -> String { "directory" }
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
            let (status, keys) = script.withLock { script in
                script.fetches += 1
                return (script.status, script.keys)
            }
            guard status == 200 else { return .text(status, "down") }
            let body = try! JSONEncoder().encode(IssuerDirectory(issuerRequestURI: "/issue", tokenKeys: keys))
            return HTTPServerResponse(status: 200, contentType: IssuerDirectory.mediaType, body: [UInt8](body))
        }
    }

    /// issue 26, item 1: an issuer directory that answers 200 with no keys (or without the key
    /// a token was spent under) must not make that token spendable again.
    @Test func noDirectoryAnswerMakesASpentTokenGoodAgain() async throws {
        let issuer = try await IssuerTests.Issuer.start()
        defer { Task { await issuer.stop() } }
        let scripted = ScriptedDirectory()
        let directory = try await Served.start(scripted)
        defer { Task { await directory.stop() } }
        let key = issuer.ring.keys[0]
        scripted.script.withLock { $0.keys = [.init(publicKeyDER: key.key.publicKeyDER, notBefore: key.notBefore)] }
        let store = try SpentTokenStore(path: nil)
        let verifier = PrivateTokenVerifier(issuerName: "127.0.0.1", originName: "pir.test", directoryURL: directory.url(IssuerDirectory.wellKnownPath),
                                            spent: store, refreshInterval: 300, fetchTimeout: testClientTimeout, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        #expect(await verifier.refreshKeys())
        let client = issuer.client(store: try PrivateTokenStore(path: nil), batch: 1)
        let token = try await client.token(for: issuer.challenge, tokenKeyDER: key.key.publicKeyDER)
        let request = HTTPServerRequest(method: "POST", path: "/queries", headers: [("Authorization", PrivateTokenHeader.authorization(token))])
        #expect(await verifier.authorize(request) == nil)
        #expect(await verifier.authorize(request)?.status == 401)

        for keys in [[], [IssuerDirectory.TokenKey(publicKeyDER: try IssuerKey.generate().publicKeyDER, notBefore: 0)]] {
            scripted.script.withLock { $0.keys = keys }
            _ = await verifier.refreshKeys()
            scripted.script.withLock { $0.keys = [.init(publicKeyDER: key.key.publicKeyDER, notBefore: key.notBefore)] }
            #expect(await verifier.refreshKeys())
            let again = await verifier.authorize(request)
            #expect(again?.status == 401, "a spent token was accepted again after a directory listing \(keys.count) other keys")
        }
        #expect(store.count == 1)
        #expect(verifier.outcomes["accepted"] == 1 && verifier.outcomes["spent"] == 3)
    }

    /// issue 26, item 1: a dead issuer costs one directory fetch per backoff, not one per
    /// request, also while no key has ever been fetched.
    @Test func aDeadIssuerIsAskedOncePerBackoffNotOncePerRequest() async throws {
        let scripted = ScriptedDirectory()
        scripted.script.withLock { $0.status = 503 }
        let directory = try await Served.start(scripted)
        defer { Task { await directory.stop() } }
        let verifier = PrivateTokenVerifier(issuerName: "127.0.0.1", originName: "pir.test", directoryURL: directory.url(IssuerDirectory.wellKnownPath),
                                            spent: try SpentTokenStore(path: nil), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        await withTaskGroup(of: Int?.self) { group in
            for _ in 0..<201 { group.addTask { await verifier.authorize(HTTPServerRequest(method: "POST", path: "/queries"))?.status } }
            for await status in group { #expect(status == 503) }
        }
        #expect(scripted.script.withLock { $0.fetches } == 1)
        #expect(verifier.consecutiveFetchFailures == 1)
        #expect(verifier.outcomes["no-keys"] == 201)
    }

    @Test func headerParsersSurviveRandomInput() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("PrivateToken challenge=token-key=\"abc_-=, ;\tBearer".utf8)
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<80, using: &generator)
            let text = String(decoding: (0..<length).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
            _ = try? PrivateTokenHeader.parseChallenges(text)
            _ = try? PrivateTokenHeader.parseAuthorization(text)
        }
        // Round trip, including the unquoted and multi-challenge forms of RFC 9577 §2.1.
        let key = try IssuerKey.generate()
        let challenge = TokenChallenge(issuerName: "issuer.test", originInfo: ["a.test", "b.test"])
        let header = PrivateTokenHeader.challenge(challenge, tokenKeyDER: key.publicKeyDER, maxAge: 10)
        let two = try PrivateTokenHeader.parseChallenges("Basic realm=\"x\", " + header + ", " + header.replacingOccurrences(of: "\"", with: ""))
        #expect(two.count == 2)
        #expect(two.allSatisfy { $0.challenge == challenge && $0.tokenKeyDER == key.publicKeyDER })
    }
}
