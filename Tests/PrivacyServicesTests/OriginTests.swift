import Foundation
import HTTPServing
import Logging
import PrivacyPass
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
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
            if let refusal = await verifier.authorize(request) { return refusal }
            return .text(200, "welcome")
        }
    }

    static func verifier(issuer: IssuerTests.Issuer, storePath: String?, origin: String = "pir.test") throws -> PrivateTokenVerifier {
        PrivateTokenVerifier(issuerName: "127.0.0.1", originName: origin, directoryURL: issuer.served.url(IssuerDirectory.wellKnownPath),
                             spent: try SpentTokenStore(path: storePath), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
    }

    static func get(_ url: URL, authorization: String? = nil) async throws -> ServiceResponse {
        var request = ServiceRequest(method: "GET", url: url)
        if let authorization { request.headers.append(("Authorization", authorization)) }
        return try await DirectTransport().send(request)
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
        #expect(try await Self.get(origin.url("/"), authorization: PrivateTokenHeader.authorization(elsewhere)).status == 401)
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

    @Test func spentStoreForgetsRetiredKeys() throws {
        let store = try SpentTokenStore(path: nil)
        let a = [UInt8](repeating: 1, count: 32), b = [UInt8](repeating: 2, count: 32)
        #expect(try store.spend(nonce: [1], keyID: a))
        #expect(try store.spend(nonce: [2], keyID: b))
        #expect(try !store.spend(nonce: [1], keyID: a))
        #expect(try store.spend(nonce: [1], keyID: b))
        #expect(try store.forgetKeys(except: [b]) == 1)
        #expect(store.count == 2)
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
