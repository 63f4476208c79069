import Foundation
import HTTPServing
import NetExtTestSupport
import PrivacyPass
import ServiceMetrics
import Testing
@testable import PrivacyServices
@testable import URLFilter

@Suite("Privacy Pass issuer")
struct IssuerTests {
    static let credential = "credential-abcdefghijklmnop"

    struct Issuer {
        let directory: TemporaryDirectory
        let ring: IssuerKeyRing
        let served: Served
        let responder: IssuerResponder
        /// As `netext-server issuer` wires them (served at GET /metrics).
        let metrics: HTTPRoleMetrics

        static func start(perHour: Double = 1000, burst: Double = 100) async throws -> Issuer {
            let directory = TemporaryDirectory()
            let ring = try IssuerKeyRing(directory: directory.path + "/keys", schedule: try KeyRotationSchedule(lifetime: 86400, overlap: 3600))
            let metrics = HTTPRoleMetrics(prefix: "netext_issuer", descriptions: IssuerMetrics.descriptions)
            let responder = IssuerResponder(keys: ring, credentials: BearerCredentials(credentials: [IssuerTests.credential]),
                                            limiter: IssuanceRateLimiter(perHour: perHour, burst: burst), metrics: IssuerMetrics(factory: metrics.exporter))
            metrics.exporter.addCollector { responder.sampleMetrics() }
            return Issuer(directory: directory, ring: ring, served: try await Served.start(responder, metrics: metrics.server), responder: responder, metrics: metrics)
        }

        func stop() async {
            await served.stop()
            directory.remove()
        }

        func client(store: PrivateTokenStore, credential: String = IssuerTests.credential, batch: Int = 4) -> PrivacyPassClient {
            PrivacyPassClient(issuerURL: served.url(""), credential: credential, transport: DirectTransport(timeout: testClientTimeout), store: store, batchSize: batch)
        }

        var challenge: TokenChallenge { TokenChallenge(issuerName: "127.0.0.1", originInfo: ["pir.test"]) }
    }

    @Test func directoryPublishesThePSSKeyAndKeyFilesArePrivate() async throws {
        let issuer = try await Issuer.start()
        defer { Task { await issuer.stop() } }
        let answer = try await DirectTransport(timeout: testClientTimeout).send(ServiceRequest(method: "GET", url: issuer.served.url(IssuerDirectory.wellKnownPath)))
        #expect(answer.header("Content-Type") == IssuerDirectory.mediaType)
        let directory = try IssuerDirectory(decoding: answer.body)
        #expect(directory.issuerRequestURI == "/issue")
        #expect(directory.tokenKeys.count == 1)
        let key = try #require(directory.tokenKeys.first?.publicKeyDER)
        // id-RSASSA-PSS with SHA-384 parameters (RFC 9578 §6.5): the same 72 bytes (SEQUENCE,
        // AlgorithmIdentifier, BIT STRING header) as the RFC's own Appendix A.2 key.
        let rfcKey = try RFCVectors.hex(try RFCVectors.list("rfc9578-privacypass-type2-blindrsa-issuance.json")[0]["pkS"])
        #expect(Array(key.prefix(72)) == Array(rfcKey.prefix(72)))
        #expect(key == issuer.ring.keys[0].key.publicKeyDER)
        let files = try FileManager.default.contentsOfDirectory(atPath: issuer.ring.directory)
        #expect(files.count == 1)
        for file in files {
            let mode = try FileManager.default.attributesOfItem(atPath: issuer.ring.directory + "/" + file)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
        let directoryMode = try FileManager.default.attributesOfItem(atPath: issuer.ring.directory)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
    }

    @Test func batchIssuanceGivesTokensThatVerifyAndPersistsTheRest() async throws {
        let issuer = try await Issuer.start()
        defer { Task { await issuer.stop() } }
        let storePath = issuer.directory.path + "/tokens"
        let store = try PrivateTokenStore(path: storePath)
        let client = issuer.client(store: store, batch: 4)
        let key = issuer.ring.keys[0].key.publicKeyDER
        let token = try await client.token(for: issuer.challenge, tokenKeyDER: key)
        #expect(token.verify(publicKeyDER: key, challenge: issuer.challenge))
        #expect(!token.verify(publicKeyDER: key, challenge: TokenChallenge(issuerName: "127.0.0.1", originInfo: ["other.test"])))
        #expect(store.count == 3)
        #expect(await client.fetchedTokens == 4)
        #expect(issuer.metrics.exporter.render().contains("netext_issuer_tokens_issued_total 4\n"))
        let mode = try FileManager.default.attributesOfItem(atPath: storePath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // The unused tokens survive a restart, and each comes out once.
        let reopened = try PrivateTokenStore(path: storePath)
        #expect(reopened.count == 3)
        var nonces = Set([token.nonce])
        for _ in 0..<3 {
            let next = try #require(try reopened.take(challengeDigest: issuer.challenge.digest, keyID: token.tokenKeyID))
            #expect(next.verify(publicKeyDER: key, challenge: issuer.challenge))
            nonces.insert(next.nonce)
        }
        #expect(nonces.count == 4)
        #expect(try reopened.take(challengeDigest: issuer.challenge.digest, keyID: token.tokenKeyID) == nil)
        #expect(try PrivateTokenStore(path: storePath).count == 0)
    }

    @Test func refusesBadCredentialsBodiesAndTypes() async throws {
        let issuer = try await Issuer.start()
        defer { Task { await issuer.stop() } }
        func post(_ body: [UInt8], bearer: String? = IssuerTests.credential, type: String = "application/private-token-request") async throws -> (Int, String) {
            var request = ServiceRequest(method: "POST", url: issuer.served.url("/issue"), headers: [("Content-Type", type)], body: body)
            if let bearer { request.headers.append(("Authorization", "Bearer \(bearer)")) }
            let answer = try await DirectTransport(timeout: testClientTimeout).send(request)
            return (answer.status, answer.message)
        }
        let key = issuer.ring.keys[0].key.publicKeyDER
        let (good, _) = try BlindRSAIssuance.makeRequest(challenge: issuer.challenge, issuerKeyDER: key)
        #expect(try await post(good.encoded(), bearer: nil).0 == 401)
        #expect(try await post(good.encoded(), bearer: "credential-wrong-wrong-wrong").0 == 401)
        #expect(try await post(good.encoded(), type: "application/json").0 == 415)
        let (status, message) = try await post(Array(good.encoded().dropLast()))
        #expect(status == 400)
        #expect(message.contains("258 bytes"))
        var wrongKey = good
        wrongKey.truncatedKeyID &+= 1
        let (wrongStatus, wrongMessage) = try await post(wrongKey.encoded())
        #expect(wrongStatus == 400)
        #expect(wrongMessage.contains("token request 0"))
        #expect(try await post(good.encoded()).0 == 200)
        // The wrong credential never appears in the metrics text.
        let metrics = try await DirectTransport(timeout: testClientTimeout).send(ServiceRequest(method: "GET", url: issuer.served.url("/metrics")))
        let exposition = String(decoding: metrics.body, as: UTF8.self)
        #expect(exposition.contains("netext_issuer_tokens_issued_total 1\n"))
        #expect(exposition.contains("netext_issuer_refused_total{reason=\"malformed\"} 1\n"), "\(exposition)")
        #expect(exposition.contains("netext_issuer_requests_total{endpoint=\"/issue\",status=\"401\"} 2\n"), "\(exposition)")
        #expect(exposition.contains("netext_issuer_keys \(Double(issuer.ring.keys.count))\n"), "\(exposition)")
        #expect(!exposition.contains("credential-wrong"))
        #expect(PrometheusExposition.problems(in: exposition).isEmpty, "\(PrometheusExposition.problems(in: exposition))")
    }

    @Test func rateLimitPerCredential() async throws {
        let issuer = try await Issuer.start(perHour: 1, burst: 5)
        defer { Task { await issuer.stop() } }
        let store = try PrivateTokenStore(path: nil)
        let client = issuer.client(store: store, batch: 4)
        let key = issuer.ring.keys[0].key.publicKeyDER
        _ = try await client.token(for: issuer.challenge, tokenKeyDER: key)
        for _ in 0..<3 { _ = try await client.token(for: issuer.challenge, tokenKeyDER: key) }
        // The store is empty and 4 more exceed the one token left in the bucket.
        do {
            _ = try await client.token(for: issuer.challenge, tokenKeyDER: key)
            Issue.record("the fifth batch should be refused")
        } catch {
            #expect(error == .server(status: 429, message: "issuer: issuance limit reached for this credential"))
        }
        #expect(issuer.responder.limiter.take(1, credential: 0) == nil)
    }

    /// issue 26, item 4: replays of one client's issuance, invalid requests and trivial
    /// blinded messages charge nothing to the credential.
    @Test func replaysAndInvalidRequestsChargeNothing() async throws {
        let issuer = try await Issuer.start(perHour: 0, burst: 5)
        defer { Task { await issuer.stop() } }
        func post(_ body: [UInt8]) async throws -> (Int, String) {
            let request = ServiceRequest(method: "POST", url: issuer.served.url("/issue"), headers: [
                ("Content-Type", IssuerResponder.requestMediaType), ("Authorization", "Bearer \(IssuerTests.credential)"),
            ], body: body)
            let answer = try await DirectTransport(timeout: testClientTimeout).send(request)
            return (answer.status, answer.message)
        }
        let key = issuer.ring.keys[0].key.publicKeyDER
        var batch: [UInt8] = []
        for _ in 0..<4 { batch += try BlindRSAIssuance.makeRequest(challenge: issuer.challenge, issuerKeyDER: key).0.encoded() }
        #expect(try await post(batch).0 == 200)
        for _ in 0..<20 {
            let (status, message) = try await post(batch)
            #expect(status == 409 && message.contains("replay"), "\(status) \(message)")
        }
        // A batch repeating one message within itself is a replay too.
        let single = try BlindRSAIssuance.makeRequest(challenge: issuer.challenge, issuerKeyDER: key).0.encoded()
        #expect(try await post(single + single).0 == 409)

        // Invalid requests: an unknown key id, a blinded message of 0 and of 1.
        let (good, _) = try BlindRSAIssuance.makeRequest(challenge: issuer.challenge, issuerKeyDER: key)
        var wrongKey = good
        wrongKey.truncatedKeyID &+= 1
        var zero = good, one = good
        zero.blindedMessage = [UInt8](repeating: 0, count: good.blindedMessage.count)
        one.blindedMessage = zero.blindedMessage.dropLast() + [1]
        for invalid in [wrongKey, zero, one] + Array(repeating: wrongKey, count: 5) {
            #expect(try await post(invalid.encoded()).0 == 400)
        }
        let (trivial, message) = try await post(one.encoded())
        #expect(trivial == 400 && message.contains("0 or 1"))

        // The one token left in the bucket (5 − 4) is still there, and then none.
        #expect(try await post(single).0 == 200)
        #expect(try await post(try BlindRSAIssuance.makeRequest(challenge: issuer.challenge, issuerKeyDER: key).0.encoded()).0 == 429)
    }

    @Test func replayWindowForgetsAfterItsWindowAndBeyondItsCapacity() {
        let window = IssuanceReplayWindow(window: 10, capacity: 3)
        let d = { (messages: [[UInt8]]) in IssuanceReplayWindow.digests(messages) }
        #expect(window.record(d([[1], [2]]), now: 0))
        #expect(window.containsAny(d([[1]]), now: 5) && !window.record(d([[2], [3]]), now: 5))
        #expect(window.record(d([[3], [4]]), now: 6))
        #expect(window.count == 3)  // [1] went: over capacity
        #expect(!window.containsAny(d([[1]]), now: 7))
        #expect(window.containsAny(d([[4]]), now: 15) && !window.containsAny(d([[2]]), now: 15))
        #expect(!window.containsAny(d([[3], [4]]), now: 16))
    }

    @Test("with a refill threshold, the next batch is fetched in the background once fewer tokens are left, and the caller after it finds them waiting")
    func backgroundRefill() async throws {
        let issuer = try await Issuer.start()
        defer { Task { await issuer.stop() } }
        let cache = InMemoryTokenCache()
        let client = PrivacyPassClient(
            issuerURL: issuer.served.url(""), credential: IssuerTests.credential, transport: IssuerServiceTransport(inner: DirectTransport(timeout: testClientTimeout)),
            store: cache, batchSize: 4, refillThreshold: 2)
        let key = issuer.ring.keys[0].key.publicKeyDER
        var nonces = Set<[UInt8]>()
        for _ in 0..<2 { nonces.insert(try await client.token(for: issuer.challenge, tokenKeyDER: key).nonce) }
        #expect(await client.fetchedTokens == 4 && cache.count == 2, "no refill while two are left")
        nonces.insert(try await client.token(for: issuer.challenge, tokenKeyDER: key).nonce)
        // One left: a batch is on its way without anyone waiting for it.
        var refilled = false
        for _ in 0..<200 where !refilled {
            refilled = await client.fetchedTokens == 8
            if !refilled { try await Task.sleep(for: .milliseconds(25)) }
        }
        let fetched = await client.fetchedTokens
        #expect(refilled && cache.count == 5, "fetched \(fetched), held \(cache.count)")
        for _ in 0..<5 { nonces.insert(try await client.token(for: issuer.challenge, tokenKeyDER: key).nonce) }
        #expect(nonces.count == 8, "every token handed out once")
    }

    @Test func clientRefusesAKeyTheIssuerDoesNotPublish() async throws {
        let issuer = try await Issuer.start()
        defer { Task { await issuer.stop() } }
        let client = issuer.client(store: try PrivateTokenStore(path: nil))
        let rogue = try IssuerKey.generate()
        await #expect(throws: PrivacyPassClient.Failure.protocolMismatch("the origin's token key is not one the issuer publishes; refusing to use it")) {
            _ = try await client.token(for: issuer.challenge, tokenKeyDER: rogue.publicKeyDER)
        }
        let otherIssuer = TokenChallenge(issuerName: "issuer.elsewhere", originInfo: ["pir.test"])
        await #expect(throws: PrivacyPassClient.Failure.protocolMismatch("the challenge names issuer 'issuer.elsewhere', not the configured '127.0.0.1'")) {
            _ = try await client.token(for: otherIssuer, tokenKeyDER: issuer.ring.keys[0].key.publicKeyDER)
        }
    }

    @Test func keyRingRotatesWithOverlapAndDeletesRetiredKeys() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let start: UInt64 = 1_800_000_000
        let ring = try IssuerKeyRing(directory: directory.path, schedule: try KeyRotationSchedule(lifetime: 1000, overlap: 100), now: start)
        #expect(ring.keys.map(\.notBefore) == [start])
        #expect(try !ring.rotate(now: start + 899))
        #expect(try ring.rotate(now: start + 900))
        #expect(ring.keys.map(\.notBefore) == [start, start + 1000])
        #expect(ring.currentKey(now: start + 999)?.keyID == ring.keys[0].key.keyID)
        #expect(ring.currentKey(now: start + 1000)?.keyID == ring.keys[1].key.keyID)
        #expect(ring.keys[0].key.keyID[31] != ring.keys[1].key.keyID[31])
        #expect(try !ring.rotate(now: start + 1099))
        #expect(try ring.rotate(now: start + 1100))
        #expect(ring.keys.map(\.notBefore) == [start + 1000])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["token-key-\(start + 1000).pem"])
        // A restart loads the same key.
        let reloaded = try IssuerKeyRing(directory: directory.path, schedule: try KeyRotationSchedule(lifetime: 1000, overlap: 100), now: start + 1100)
        #expect(reloaded.keys.map(\.key.keyID) == ring.keys.map(\.key.keyID))
    }

    @Test func credentialFileRefusesShortLinesByNumber() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/credentials"
        try "# comment\n\ncredential-abcdefghijklmnop\nshort\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: PrivacyServiceError.file(path: path, reason: "line 4: a credential needs at least 16 characters")) { _ = try BearerCredentials(file: path) }
        let credentials = BearerCredentials(credentials: ["credential-abcdefghijklmnop", "credential-2-abcdefghijklm"])
        #expect(credentials.match(authorization: "Bearer credential-2-abcdefghijklm") == 1)
        #expect(credentials.match(authorization: "bearer credential-abcdefghijklmnop") == 0)
        #expect(credentials.match(authorization: "Bearer credential-abcdefghijklmno") == nil)
        #expect(credentials.match(authorization: "Basic credential-abcdefghijklmnop") == nil)
        #expect(credentials.match(authorization: nil) == nil)
    }
}


@Suite("Key rotation schedule")
struct KeyRotationScheduleTests {
    /// Random histories: at every moment some key is in force, keys never pile up, and a key
    /// never retires before its successor has been in force for the overlap.
    @Test func invariantsHoldOverRandomHistories() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let lifetime = UInt64.random(in: 60...10_000, using: &generator)
            let overlap = UInt64.random(in: 0..<lifetime, using: &generator)
            let schedule = try KeyRotationSchedule(lifetime: lifetime, overlap: overlap)
            var now = UInt64.random(in: 1_000_000...2_000_000, using: &generator)
            var keys: [UInt64] = []
            for _ in 0..<40 {
                let plan = schedule.plan(notBefores: keys, now: now)
                keys += plan.create
                #expect(plan.retire < keys.count)
                let retired = Array(keys.prefix(plan.retire))
                keys.removeFirst(plan.retire)
                #expect(keys == keys.sorted())
                #expect(keys.contains { $0 <= now }, "no key in force at \(now): \(keys)")
                #expect(keys.count <= 3)
                for old in retired {
                    let successor = keys.first { $0 > old } ?? now
                    #expect(successor + overlap <= now)
                }
                now += UInt64.random(in: 0...(2 * lifetime), using: &generator)
            }
        }
        #expect(throws: PrivacyServiceError.self) { try KeyRotationSchedule(lifetime: 30, overlap: 0) }
        #expect(throws: PrivacyServiceError.self) { try KeyRotationSchedule(lifetime: 100, overlap: 100) }
    }
}
