import BloomFilter
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HomomorphicEncryption
import HTTPServing
import Logging
import PIRProtobuf
import PIRService
import ServiceMetrics
import Synchronization
import NetExtTestSupport
import Testing
import URLFilterDatabase
@testable import URLFilter

/// Collects log records so tests can check what the server writes.
final class LogCollector: @unchecked Sendable {
    let lines = Mutex<[String]>([])
    struct Handler: LogHandler {
        let collector: LogCollector
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let text = "\(event.message) \(event.metadata ?? [:]) \(self.metadata)"
            collector.lines.withLock { $0.append(text) }
        }
    }
    var logger: Logger { Logger(label: "test") { _ in Handler(collector: self) } }
}

/// How long the tests' HTTP clients wait for an in-process server. A healthy one answers in
/// milliseconds, but CI's first minute starves the task pool (and so the servers) for 60–90 s,
/// and the clients' 30 s default then fails tests that would pass.
let testClientTimeout: Double = 150


/// A built database under a unique temporary directory, served on 127.0.0.1 (port chosen by
/// the kernel); removed afterwards.
struct ServedDatabase {
    static let useCase = "com.example.test.url.filtering"
    let directory: String
    let server: PIRHTTPServer
    let port: Int
    let prefilter: BloomFilter
    /// The server's metrics, as `netext-server pir` wires them (also served at GET /metrics).
    let metrics: HTTPRoleMetrics

    static func start(
        urls: [String], logs: LogCollector, authorizer: (any HTTPRequestAuthorizer)? = nil, keyCapacity: Int = 256, workCapacity: Int = 1024
    ) async throws -> ServedDatabase {
        let directory = NSTemporaryDirectory() + "netext-pir-test-\(UUID().uuidString)"
        let builder = URLFilterDatabaseBuilder(falsePositiveRate: 0.001, useCase: useCase)
        let summary = try builder.build(list: urls.joined(separator: "\n"), output: directory)
        let useCases = try PIRDatabaseDirectory.load(root: directory, threads: 2)
        let metrics = HTTPRoleMetrics(prefix: "netext_pir", descriptions: PIRMetrics.descriptions)
        let handler = PIRRequestHandler(useCases: useCases, keyCapacity: keyCapacity, metrics: PIRMetrics(factory: metrics.exporter))
        metrics.exporter.addCollector { handler.sampleMetrics() }
        let server = PIRHTTPServer(handler: handler, logger: logs.logger, authorizer: authorizer, workCapacity: workCapacity, metrics: metrics.server)
        let port = try await server.start(host: "127.0.0.1", port: 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/prefilter.bin"))
        let prefilter = try BloomFilter(data: [UInt8](data), bitCount: summary.bitCount, hashCount: summary.hashCount, murmurSeed: 0)
        return ServedDatabase(directory: directory, server: server, port: port, prefilter: prefilter, metrics: metrics)
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    func stop() async {
        await server.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `body`, then stops the server and removes its directory, whether `body` threw or
    /// not (a `defer { Task { … } }` may never run before the test process exits).
    func use<Result>(_ body: (ServedDatabase) async throws -> Result) async throws -> Result {
        try await withCleanup(self, cleanup: { await $0.stop() }, body)
    }
}

@Suite("PIR service over loopback", .serialized)
struct PIRServiceTests {
    static let urls = (0..<10_000).map { "https://www.site\($0).example/path\($0 % 7)/" } + ["blocked.example/a/", "whole-site.example"]

    @Test func tenThousandURLRoundTrip() async throws {
        let logs = LogCollector()
        let served = try await ServedDatabase.start(urls: Self.urls, logs: logs)
        try await served.use { served in
            let client = PIRHTTPClient(server: served.url, useCase: ServedDatabase.useCase, transport: DirectTransport(timeout: testClientTimeout))
            let checks: [(String, URLFilterVerdict)] = [
                ("https://www.site42.example/path0/", .deny),
                ("http://www.site9999.example/path3/deeper/page.html", .deny),
                ("http://site9999.example/path3/", .allow),  // the record is on www.
                ("https://blocked.example/a/b/c?d=1", .deny),
                ("https://blocked.example/b", .allow),
                ("https://cdn.whole-site.example/x.js", .deny),
                ("https://site42.example/path1/", .allow),
                ("https://not-listed.example/", .allow),
            ]
            let verdicts = try await client.check(checks.map(\.0), prefilter: served.prefilter)
            #expect(verdicts == checks.map(\.1))
        }
    }

    @Test func serverViewIsTheSameSizeForDifferentURLsAndNamesNeither() async throws {
        let logs = LogCollector()
        let served = try await ServedDatabase.start(urls: Array(Self.urls.prefix(2000)), logs: logs)
        let seen = Mutex<[(String, [UInt8])]>([])
        let client = PIRHTTPClient(server: served.url, useCase: ServedDatabase.useCase, transport: DirectTransport(timeout: testClientTimeout), observer: { path, body in
            seen.withLock { $0.append((path, body)) }
        })
        try await client.setUp()
        // Two URLs with the same number of keys (two hosts, each with and without "/"), one listed, one not.
        let first = "www.site7.example", second = "www.zz-unlisted.example"
        seen.withLock { $0.removeAll() }
        let logStart = logs.lines.withLock { $0.count }
        _ = try await client.check(["https://\(first)"])
        let firstView = seen.withLock { $0 }
        let firstLogs = logs.lines.withLock { Array($0[logStart...]) }
        seen.withLock { $0.removeAll() }
        let logMiddle = logs.lines.withLock { $0.count }
        _ = try await client.check(["https://\(second)"])
        let secondView = seen.withLock { $0 }
        let secondLogs = logs.lines.withLock { Array($0[logMiddle...]) }
        #expect(firstView.map(\.0) == secondView.map(\.0))
        #expect(firstView.map(\.1.count) == secondView.map(\.1.count))
        for (_, body) in firstView + secondView {
            for name in [first, second, "site7"] {
                #expect(!String(decoding: body, as: UTF8.self).contains(name))
            }
        }
        #expect(firstLogs.count == secondLogs.count)
        for line in firstLogs + secondLogs { #expect(!line.contains("site7") && !line.contains("unlisted")) }
        await served.stop()
    }

    @Test func malformedRequestsGetClearErrorsAndTheServerStaysUp() async throws {
        let logs = LogCollector()
        let served = try await ServedDatabase.start(urls: Array(Self.urls.prefix(1000)), logs: logs)
        func send(_ method: String, _ path: String, _ body: [UInt8], user: String? = "u1") async throws -> (Int, String) {
            var request = URLRequest(url: served.url.appendingPathComponent(String(path.dropFirst())))
            request.httpMethod = method
            if method == "POST" { request.httpBody = Data(body) }
            if let user { request.setValue(user, forHTTPHeaderField: "User-Identifier") }
            request.timeoutInterval = testClientTimeout
        let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
        }
        var (status, text) = try await send("POST", "/queries", Array("garbage".utf8))
        #expect(status == 400 && text.contains("malformed request"))
        (status, text) = try await send("POST", "/config", [UInt8](repeating: 0x0A, count: 70_000))
        #expect(status == 413 && text.contains("exceeds"))
        (status, _) = try await send("GET", "/queries", [])
        #expect(status == 405)
        (status, _) = try await send("POST", "/nowhere", [])
        #expect(status == 404)
        var wrongHash = ProtoRequests()
        var request = ProtoRequest()
        request.usecase = ServedDatabase.useCase
        request.pirRequest.configurationHash = Data([1, 2, 3])
        wrongHash.requests = [request]
        (status, text) = try await send("POST", "/queries", try wrongHash.serializedBytes())
        // Apple's Error message, config_version_not_found (what Apple's clients parse).
        #expect(status == 410 && Array(text.utf8) == [0x0A, 0x00])
        request.usecase = "no.such.use.case"
        wrongHash.requests = [request]
        (status, _) = try await send("POST", "/queries", try wrongHash.serializedBytes())
        #expect(status == 404)
        (status, text) = try await send("POST", "/key", try ProtoEvaluationKeys().serializedBytes(), user: nil)
        #expect(status == 400 && text.contains("User-Identifier"))
        // Still serving real queries.
        let client = PIRHTTPClient(server: served.url, useCase: ServedDatabase.useCase, transport: DirectTransport(timeout: testClientTimeout))
        #expect(try await client.check(["https://www.site3.example/path3/"], prefilter: served.prefilter) == [.deny])
        await served.stop()
    }
}
