import Foundation
import HTTPServing
import Logging
import NetExtTestSupport
import Synchronization
import Testing
@testable import PrivacyServices

/// `/healthz`, `/readyz` and `/metrics` on the HTTP roles.
@Suite("HTTP roles: health probes and metrics")
struct HealthAndMetricsTests {
    /// Refuses every request at admission (as a role behind Privacy Pass does without a token)
    /// and is ready or not as the test says.
    final class GuardedResponder: HTTPResponder {
        let notReady = Mutex<String?>(nil)
        func bodyLimit(method: String, path: String) -> Int { 1024 }
        func endpointLabel(path: String) -> String { "other" }
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse { .text(200, "served") }
        func admit(method: String, path: String, headers: [(name: String, value: String)]) -> HTTPServerResponse? { .text(401, "token required") }
        func unreadiness() -> String? { notReady.withLock { $0 } }
    }

    static func get(_ path: String, port: Int, method: String = "GET") async throws -> String {
        try await offPool {
            let client = try HTTPServerLimitsTests.RawClient(port: port)
            client.send("\(method) \(path) HTTP/1.1\r\nHost: role.test\r\nConnection: close\r\n\r\n")
            return client.readUntilClosed().text
        }
    }

    @Test("healthz and readyz are answered before admission; readyz says why a role is not ready; other methods are refused")
    func probes() async throws {
        let responder = GuardedResponder()
        let (server, port) = try await HTTPServerLimitsTests.serve(responder, limits: HTTPServerLimits())
        defer { Task { await server.shutdown() } }
        #expect(try await Self.get("/anything", port: port).hasPrefix("HTTP/1.1 401"), "admission applies to everything else")
        let health = try await Self.get("/healthz", port: port)
        #expect(health.hasPrefix("HTTP/1.1 200") && health.hasSuffix("\r\n\r\nok\n"), "\(health)")
        #expect(try await Self.get("/readyz", port: port).hasPrefix("HTTP/1.1 200"))
        responder.notReady.withLock { $0 = "the work queue is full (8 jobs)" }
        let unready = try await Self.get("/readyz", port: port)
        #expect(unready.hasPrefix("HTTP/1.1 503") && unready.hasSuffix("not ready: the work queue is full (8 jobs)\n"), "\(unready)")
        #expect(try await Self.get("/healthz", port: port).hasPrefix("HTTP/1.1 200"), "a busy role is still alive")
        #expect(try await Self.get("/healthz", port: port, method: "DELETE").hasPrefix("HTTP/1.1 405"))
    }

    @Test("the issuer's, gateway's and relay's metrics: every family with HELP and TYPE, counters named _total")
    func serviceCounters() {
        let counters = ServiceCounters()
        counters.countRequest(endpoint: "/token-request", status: 200)
        counters.countRequest(endpoint: "/token-request", status: 401)
        counters.add("tokens_issued", 16)
        counters.count("rate_limited")
        counters.count("some_new_counter")
        let text = counters.render(prefix: "netext_issuer", extra: ["# HELP netext_issuer_keys Issuer keys published.", "# TYPE netext_issuer_keys gauge", "netext_issuer_keys 2"])
        #expect(PrometheusExposition.problems(in: text).isEmpty, "\(PrometheusExposition.problems(in: text))\n\(text)")
        #expect(text.contains("# TYPE netext_issuer_requests_total counter\nnetext_issuer_requests_total{endpoint=\"/token-request\",status=\"200\"} 1\nnetext_issuer_requests_total{endpoint=\"/token-request\",status=\"401\"} 1\n"))
        #expect(text.contains("netext_issuer_tokens_issued_total 16"))
        #expect(text.contains("# HELP netext_issuer_some_new_counter_total Some New Counter."))
        // The checker itself finds what is missing.
        #expect(!PrometheusExposition.problems(in: "netext_x_total 1\n").isEmpty)
        #expect(!PrometheusExposition.problems(in: "# HELP a_seconds A.\n# TYPE a_seconds summary\na_seconds{quantile=\"0.5\"} 1\n").isEmpty)
    }
}
