import CoreMetrics
import Foundation
import HTTPServing
import Logging
import NetExtCore
import ServiceMetrics
import NetExtTestSupport
import Synchronization
import Testing
@testable import PrivacyServices
@testable import URLFilter

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
            // The server closes after answering, so a long timeout costs nothing when it works; 3 s
            // was too short once when the whole suite kept both cores busy.
            let client = try HTTPServerLimitsTests.RawClient(port: port, timeout: 20)
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

    @Test("the gateway's and relay's metrics over GET /metrics: HELP and TYPE for every family, per-reason counters, upstream histograms, nothing a client sent")
    func gatewayAndRelayMetrics() async throws {
        let directory = TemporaryDirectory()
        let target = RecordingTarget()
        let targetServer = try await Served.start(target)
        let ring = try GatewayKeyRing(directory: directory.path + "/keys", schedule: try KeyRotationSchedule(lifetime: 86400, overlap: 3600))
        let gatewayMetrics = HTTPRoleMetrics(prefix: "netext_gateway", descriptions: GatewayMetrics.descriptions)
        let gateway = try await Served.start(
            GatewayResponder(keys: ring, targets: ["service.test": targetServer.url("")], metrics: GatewayMetrics(factory: gatewayMetrics.exporter)),
            metrics: gatewayMetrics.server)
        let relayMetrics = HTTPRoleMetrics(prefix: "netext_relay", descriptions: RelayMetrics.descriptions)
        let relay = try await Served.start(
            RelayResponder(gatewayURL: gateway.url("/gateway"), keysURL: gateway.url("/ohttp-keys"), metrics: RelayMetrics(factory: relayMetrics.exporter)),
            metrics: relayMetrics.server)
        try await withCleanup((), cleanup: { _ in
            await relay.stop()
            await gateway.stop()
            await targetServer.stop()
            directory.remove()
        }) { _ in
            let secret = Array("private-path-and-body".utf8)
            let transport = ObliviousTransport(relayURL: relay.url("/relay"), timeout: testClientTimeout)
            let answer = try await transport.send(ServiceRequest(method: "POST", url: URL(string: "http://service.test/\(String(decoding: secret, as: UTF8.self))")!, body: secret))
            #expect(answer.status == 200)
            let refusedTarget = try await transport.send(ServiceRequest(method: "GET", url: URL(string: "http://elsewhere.test/")!))
            #expect(refusedTarget.status == 403)
            // A request the gateway cannot open: an unknown key id.
            let garbage = try await DirectTransport(timeout: testClientTimeout).send(ServiceRequest(
                method: "POST", url: relay.url("/relay"), headers: [("Content-Type", GatewayResponder.requestMediaType)], body: [0xEE, 1, 2, 3]))
            #expect(garbage.status == 400)

            let gatewayText = try await Self.get("/metrics", port: gateway.port)
            let relayText = try await Self.get("/metrics", port: relay.port)
            #expect(gatewayText.hasPrefix("HTTP/1.1 200") && gatewayText.contains("Content-Type: text/plain; version=0.0.4"), "\(gatewayText)")
            for (text, exporter) in [(gatewayText, gatewayMetrics.exporter), (relayText, relayMetrics.exporter)] {
                let body = String(text[text.range(of: "\r\n\r\n")!.upperBound...])
                #expect(PrometheusExposition.problems(in: body).isEmpty, "\(PrometheusExposition.problems(in: body))\n\(body)")
                #expect(exporter.undescribedNames.isEmpty, "\(exporter.undescribedNames)")
                for leak in ["private-path", "service.test", "elsewhere.test", "127.0.0.1"] { #expect(!body.contains(leak), "\(leak) in the metrics") }
            }
            #expect(gatewayText.contains("netext_gateway_forwarded_total 1\n"), "\(gatewayText)")
            #expect(gatewayText.contains("netext_gateway_target_refused_total 1\n"))
            #expect(gatewayText.contains("netext_gateway_decapsulation_failed_total 1\n"))
            #expect(gatewayText.contains("netext_gateway_target_duration_seconds_count 1\n"))
            #expect(gatewayText.contains("netext_gateway_requests_total{endpoint=\"/gateway\",status=\"400\"} 1\n"))
            #expect(gatewayText.contains("# TYPE netext_gateway_request_duration_seconds histogram"))
            #expect(relayText.contains("netext_relay_relayed_total 3\n"), "\(relayText)")
            #expect(relayText.contains("netext_relay_gateway_duration_seconds_count 3\n"))
            #expect(relayText.contains("netext_relay_gateway_failures_total{reason=\"unreachable\"} 0\n"))
        }
    }

    @Test("the metrics listener (netextd, the tunnel server) serves /metrics and the probes on loopback only, 404 for anything else")
    func metricsListener() async throws {
        for refused in ["0.0.0.0:9586", "10.1.2.3:9586", "[::]:9586", "9586"] {
            #expect(throws: MetricsListenerError.self, "\(refused)") { try MetricsListener.parse(refused) }
        }
        let exporter = PrometheusExporter(descriptions: [MetricDescription("netext_test_things_total", "Things counted.")])
        let things = CoreMetrics.Counter(label: "netext_test_things_total", factory: exporter)
        let collected = Mutex(0)
        exporter.addCollector { collected.withLock { $0 += 1 } }
        things.increment(by: 3)
        let listener = try await MetricsListener.start(try MetricsListener.parse("127.0.0.1:0"), exporter: exporter, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try await withCleanup(listener, cleanup: { await $0.stop() }) { listener in
            #expect(listener.address.port != 0)
            let metrics = try await Self.get("/metrics", port: listener.address.port)
            #expect(metrics.hasPrefix("HTTP/1.1 200") && metrics.hasSuffix("# HELP netext_test_things_total Things counted.\n# TYPE netext_test_things_total counter\nnetext_test_things_total 3\n"), "\(metrics)")
            #expect(collected.withLock { $0 } == 1, "collectors run before each rendering")
            #expect(try await Self.get("/healthz", port: listener.address.port).hasPrefix("HTTP/1.1 200"))
            #expect(try await Self.get("/anything", port: listener.address.port).hasPrefix("HTTP/1.1 404"))
            // A port already taken is said in a sentence naming the address, not as NIO's bind dump.
            do {
                let second = try await MetricsListener.start(listener.address, exporter: exporter, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
                await second.stop()
                Issue.record("a second listener bound \(listener.address)")
            } catch let error as MetricsListenerError {
                #expect(error.message == "cannot listen for metrics on \(listener.address): the address is already in use (another process listens on this port)")
            }
        }
        // The checker itself finds what is missing.
        #expect(!PrometheusExposition.problems(in: "netext_x_total 1\n").isEmpty)
        #expect(!PrometheusExposition.problems(in: "# HELP a_seconds A.\n# TYPE a_seconds histogram\na_seconds_bucket{le=\"+Inf\"} 1\n").isEmpty)
    }
}
