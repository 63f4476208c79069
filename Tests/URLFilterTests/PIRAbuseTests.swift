import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PIRProtobuf
import NetExtTestSupport
import PIRService
import ServiceMetrics
import Synchronization
import Testing
import URLFilter

/// What the PIR server does when clients do not play fair (issue 26, item 7): a flood of
/// uploads under fresh user identifiers, messages bigger than the work queue, more queries per
/// message than the server allows.
@Suite("PIR service under abuse", .serialized)
struct PIRAbuseTests {
    static let urls = (0..<1_000).map { "https://www.site\($0).example/path\($0 % 7)/" }

    /// POSTs `body` to `path` on the served database; status, Retry-After and text.
    func post(_ served: ServedDatabase, _ path: String, _ body: [UInt8], user: String) async throws -> (status: Int, retryAfter: String?, text: String) {
        var request = URLRequest(url: served.url.appendingPathComponent(String(path.dropFirst())))
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue(user, forHTTPHeaderField: "User-Identifier")
        request.timeoutInterval = testClientTimeout
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        return (http.statusCode, http.value(forHTTPHeaderField: "Retry-After"), String(decoding: data, as: UTF8.self))
    }

    /// A client that has set up and checked one URL, with the bodies it sent.
    func recordedClient(_ served: ServedDatabase) async throws -> (user: String, key: [UInt8], query: ProtoRequest) {
        let seen = Mutex<[(String, [UInt8])]>([])
        let user = "legitimate-\(UUID().uuidString)"
        let client = PIRHTTPClient(
            server: served.url, useCase: ServedDatabase.useCase, userIdentifier: user, transport: DirectTransport(timeout: testClientTimeout), observer: { path, body in seen.withLock { $0.append((path, body)) } })
        #expect(try await client.check(["https://www.site3.example/path3/"]) == [.deny])
        let key = try #require(seen.withLock { $0.first { $0.0 == "/key" }?.1 })
        let queries = try ProtoRequests(serializedBytes: try #require(seen.withLock { $0.last { $0.0 == "/queries" }?.1 }))
        return (user, key, try #require(queries.requests.first))
    }

    // 64 uploads (4× the capacity) make the point; each parses a ~1 MB key on the shared task
    // pool, and 400 of them in a debug build starved the other in-process servers of CI for a
    // minute. The full-size flood (256 keys, release) is in scripts/attack.
    @Test("64 uploads under fresh user ids do not push out the key of a client that is querying (capacity 16)")
    func keyFloodDoesNotEvictKeysInUse() async throws {
        let served = try await ServedDatabase.start(urls: Self.urls, logs: LogCollector(), keyCapacity: 16)
        try await served.use { served in
            let (user, keyUpload, _) = try await recordedClient(served)
            let hash = try #require(try ProtoEvaluationKeys(serializedBytes: keyUpload).keys.first).metadata.identifier
            let keys = served.server.handler.keys
            #expect(keys.isProtected(user: user, configHash: Array(hash)), "a key that answered a query is protected")
            for index in 0..<64 {
                let answer = try await post(served, "/key", keyUpload, user: "flood-\(index)")
                #expect(answer.status == 200, "\(answer)")
            }
            #expect(keys.count <= 16)
            #expect(keys.key(user: user, configHash: Array(hash)) != nil, "the querying client's key survived the flood")
            #expect(keys.timestamp(user: "flood-0", configHash: Array(hash)) == 0, "early flood keys were the ones dropped")
        }
    }

    @Test("a message with more queries than the work queue holds is answered 503 with Retry-After; one that fits is answered")
    func overloadedQueueAnswers503() async throws {
        let served = try await ServedDatabase.start(urls: Self.urls, logs: LogCollector(), workCapacity: 8)
        try await served.use { served in
            let (user, _, query) = try await recordedClient(served)
            var fits = ProtoRequests()
            fits.requests = Array(repeating: query, count: 8)
            let answered = try await post(served, "/queries", try fits.serializedBytes(), user: user)
            #expect(answered.status == 200, "\(answered)")
            var tooMany = ProtoRequests()
            tooMany.requests = Array(repeating: query, count: 9)
            let refused = try await post(served, "/queries", try tooMany.serializedBytes(), user: user)
            #expect(refused.status == 503, "\(refused)")
            #expect(Int(refused.retryAfter ?? "") ?? 0 >= 1, "Retry-After: \(String(describing: refused.retryAfter))")
            #expect(refused.text.contains("busy"))
            let metrics = served.metrics.exporter.render()
            #expect(metrics.contains("netext_pir_overloaded_total 1"))
            // A well-formed exposition: HELP and TYPE for every family, the histogram's sum and count.
            #expect(PrometheusExposition.problems(in: metrics).isEmpty, "\(PrometheusExposition.problems(in: metrics))")
            #expect(served.metrics.exporter.undescribedNames.isEmpty, "\(served.metrics.exporter.undescribedNames)")
            #expect(metrics.contains("netext_pir_queries_total 16\n") && metrics.contains("netext_pir_query_duration_seconds_count 16\n"), "\(metrics)")
            #expect(metrics.contains("netext_pir_requests_total{endpoint=\"/queries\",status=\"503\"} 1"), "\(metrics)")
            #expect(metrics.contains("netext_pir_use_cases 1.0\n") && metrics.contains("netext_pir_evaluation_keys 1.0\n"), "\(metrics)")
        }
    }

    @Test("a server that allows 4 queries per message (one token's budget) refuses 5 before any homomorphic work")
    func queriesPerRequestBudget() async throws {
        let served = try await ServedDatabase.start(urls: Self.urls, logs: LogCollector())
        try await served.use { served in
            let (user, _, query) = try await recordedClient(served)
            let exporter = PrometheusExporter(descriptions: PIRMetrics.descriptions)
            let strict = PIRRequestHandler(
                useCases: try PIRDatabaseDirectory.load(root: served.directory, threads: 1), maximumQueriesPerRequest: 4, metrics: PIRMetrics(factory: exporter))
            var five = ProtoRequests()
            five.requests = Array(repeating: query, count: 5)
            #expect(throws: PIRServiceError.malformedRequest("5 requests in one message (1–4)")) {
                try strict.prepareQueries(body: try five.serializedBytes(), user: user)
            }
            #expect(exporter.render().contains("netext_pir_queries_total 0\n"), "no query was answered")
        }
    }
}
