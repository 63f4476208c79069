import Foundation
import HTTPServing
import NetExtCore
import NetExtTestSupport
import ObliviousHTTP
import Synchronization
import Testing
@testable import PrivacyServices

/// The Oblivious DoH target and proxy (RFC 9230) served on loopback over TLS: a client seals
/// a query, the proxy forwards it without anything about the client, the target opens it,
/// asks its resolver and seals the answer back.
@Suite("Oblivious DoH target and proxy")
struct ObliviousDoHServingTests {
    /// A resolver that records the queries it is asked and answers each with one A record.
    final class RecordingResolver: Sendable {
        let asked = Mutex<[[UInt8]]>([])
        let answers: Bool

        init(answers: Bool = true) { self.answers = answers }

        func resolve(_ query: [UInt8]) -> [UInt8]? {
            asked.withLock { $0.append(query) }
            guard answers else { return nil }
            var reply = query
            reply[2] |= 0x80
            reply[7] = 1
            return reply + [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7]
        }
    }

    static func query(_ name: String, id: UInt16 = 0x4242) -> [UInt8] {
        var message: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") { message += [UInt8(label.utf8.count)] + Array(label.utf8) }
        return message + [0, 0, 1, 0, 1]
    }

    struct Chain {
        let directory: TemporaryDirectory
        let ring: ObliviousDoHKeyRing
        let resolver: RecordingResolver
        let targetTap: Wiretap
        let target: Served
        let proxy: Served
        let upstream: HTTPUpstream

        static func start(_ certificates: TestCertificates, resolverAnswers: Bool = true) async throws -> Chain {
            let directory = TemporaryDirectory()
            let ring = try ObliviousDoHKeyRing(directory: directory.path + "/odoh-keys", schedule: try KeyRotationSchedule(lifetime: 86400, overlap: 3600))
            let resolver = RecordingResolver(answers: resolverAnswers)
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            let targetTap = Wiretap(ObliviousDoHTargetResponder(keys: ring) { resolver.resolve($0) })
            let target = try await Served.start(targetTap, tls: tls)
            let trust = try ClientTLS(caFile: certificates.caFile)
            let proxy = try await Served.start(
                ObliviousDoHProxyResponder(targets: ["localhost:\(target.port)"], upstream: HTTPUpstream(timeout: testClientTimeout, tls: trust)), tls: tls)
            return Chain(directory: directory, ring: ring, resolver: resolver, targetTap: targetTap, target: target, proxy: proxy,
                         upstream: HTTPUpstream(timeout: testClientTimeout, tls: trust))
        }

        func stop() async {
            await proxy.stop()
            await target.stop()
            directory.remove()
        }

        var targetHost: String { "localhost:\(target.port)" }

        func send(_ body: [UInt8], targetHost: String? = nil, contentType: String = ObliviousDoH.mediaType) async throws -> HTTPServerResponse {
            let url = proxy.url("/dns-query?targethost=\(targetHost ?? self.targetHost)&targetpath=/dns-query")
            return try await upstream.exchange(method: "POST", url: url, headers: [("Content-Type", contentType), ("Cookie", "client=1")], body: body)
        }

        func configs() async throws -> [ObliviousDoHConfig] {
            let answer = try await upstream.exchange(method: "GET", url: proxy.url("/odohconfigs?targethost=\(targetHost)"), headers: [], body: [])
            #expect(answer.status == 200)
            return try ObliviousDoHConfig.decodeList(answer.body)
        }
    }

    static func withChain(resolverAnswers: Bool = true, _ body: (Chain) async throws -> Void) async throws {
        try await withCleanup(try await TestCertificates.make(), cleanup: { $0.remove() }) { certificates in
            try await withCleanup(try await Chain.start(certificates, resolverAnswers: resolverAnswers), cleanup: { await $0.stop() }, body)
        }
    }

    @Test func aQueryCrossesProxyAndTargetSealedBothWays() async throws {
        try await Self.withChain { chain in
            let configs = try await chain.configs()
            #expect(configs == [chain.ring.keys.last!.key.config])
            let query = Self.query("secret-name.lab")
            let (sealed, context) = try ObliviousDoH.sealQuery(query, padding: 20, config: configs[0])
            let answer = try await chain.send(sealed)
            #expect(answer.status == 200)
            #expect(answer.header("content-type") == ObliviousDoH.mediaType)
            let dns = try context.openResponse(answer.body)
            #expect(dns.count == query.count + 16 && Array(dns.suffix(4)) == [192, 0, 2, 7])
            // The resolver was asked the query itself; the proxy's request to the target held
            // only ciphertext and none of the client's header fields.
            #expect(chain.resolver.asked.withLock { $0 } == [query])
            let seen = chain.targetTap.bodies.withLock { $0 }
            #expect(!seen.contains { $0.contains(bytes: Array("secret-name".utf8)) })
            let headers = try #require(chain.targetTap.headers.withLock { $0.last })
            for name in ["Cookie", "Forwarded", "X-Forwarded-For", "Via"] { #expect(!headers.contains { $0.name.lowercased() == name.lowercased() }, "\(name) reached the target") }
            // Responses are padded (RFC 8467's 468-byte blocks inside the seal).
            #expect((answer.body.count - 1 - 2 - 16 - 2 - 16) % 468 == 0)
        }
    }

    @Test func unknownKeysAreUnauthorizedAndGarbageIsABadRequest() async throws {
        try await Self.withChain { chain in
            let stranger = ObliviousDoH.TargetKey(privateKey: .init())
            let (sealed, _) = try ObliviousDoH.sealQuery(Self.query("a.lab"), config: stranger.config)
            #expect(try await chain.send(sealed).status == 401)
            #expect(try await chain.send([3, 0, 0, 0, 1, 9]).status == 400)
            #expect(try await chain.send([1, 0, 32] + Array(stranger.keyID) + [0, 1, 9]).status == 401)
            // A sealed message that is not a DNS query.
            let (notDNS, _) = try ObliviousDoH.sealQuery([1, 2, 3], config: try await chain.configs()[0])
            let answer = try await chain.send(notDNS)
            #expect(answer.status == 400)
            #expect(chain.resolver.asked.withLock { $0.isEmpty })
        }
    }

    @Test func aResolverWithoutAnAnswerGivesASealedServerFailure() async throws {
        try await Self.withChain(resolverAnswers: false) { chain in
            let query = Self.query("down.lab", id: 7)
            let (sealed, context) = try ObliviousDoH.sealQuery(query, config: try await chain.configs()[0])
            let answer = try await chain.send(sealed)
            #expect(answer.status == 200)
            let dns = try context.openResponse(answer.body)
            #expect(dns[0] == 0 && dns[1] == 7 && dns[3] & 0x0F == 2)
        }
    }

    @Test func theProxyForwardsOnlyToItsTargets() async throws {
        try await Self.withChain { chain in
            let (sealed, _) = try ObliviousDoH.sealQuery(Self.query("a.lab"), config: try await chain.configs()[0])
            let refused = try await chain.send(sealed, targetHost: "127.0.0.1:\(chain.target.port)")
            #expect(refused.status == 403)
            #expect(refused.header("proxy-status")?.contains("http_request_denied") == true)
            let missing = try await chain.upstream.exchange(
                method: "POST", url: chain.proxy.url("/dns-query"), headers: [("Content-Type", ObliviousDoH.mediaType)], body: sealed)
            #expect(missing.status == 400)
            #expect(missing.header("proxy-status")?.contains("http_request_error") == true)
            #expect(try await chain.send(sealed, contentType: "application/dns-message").status == 415)
            #expect(chain.targetTap.bodies.withLock { $0.count } == 1)  // only the configuration fetch
            #expect(ObliviousDoHProxyResponder.queryVariables("targethost=a.example%3A8443&targetpath=%2Fdns-query&targethost=b") == ["targethost": "a.example:8443", "targetpath": "/dns-query"])
        }
    }

    @Test func keysRotateAndTheOldKeyStillOpensDuringTheOverlap() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let schedule = try KeyRotationSchedule(lifetime: 1000, overlap: 100)
        let ring = try ObliviousDoHKeyRing(directory: directory.path, schedule: schedule, now: 10_000)
        let first = ring.keys.last!.key
        try ring.rotate(now: 10_000 + 950)
        let published = try ObliviousDoHConfig.decodeList(ring.publishedConfigs(now: 11_000))
        #expect(published.count == 2 && published[1] == first.config)
        // Reloaded from disk: the same keys.
        let again = try ObliviousDoHKeyRing(directory: directory.path, schedule: schedule, now: 11_000)
        #expect(again.keys.map(\.key.keyID) == ring.keys.map(\.key.keyID))
        let (sealed, _) = try ObliviousDoH.sealQuery(Self.query("a.lab"), config: first.config)
        #expect(try ObliviousDoH.openQuery(sealed, keys: again.keys.map(\.key)).dns == Self.query("a.lab"))
    }
}
