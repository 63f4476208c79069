import Foundation
import HTTPServing
import Logging
import NetExtTestSupport
import Synchronization

/// A temporary directory with a unique name, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "netext-privacy-test-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A responder served on 127.0.0.1 with a kernel-chosen port.
struct Served {
    let server: HTTPServer
    let port: Int

    /// Serves `responder` on loopback, over TLS when `tls` is given.
    static func start(
        _ responder: any HTTPResponder, tls: ServerTLS? = nil, host: String = "127.0.0.1", limits: HTTPServerLimits = HTTPServerLimits(),
        metrics: HTTPServerMetrics? = nil
    ) async throws -> Served {
        let server = HTTPServer(responder: responder, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }, limits: limits, tls: tls, metrics: metrics)
        let port = try await server.start(host: host, port: 0)
        return Served(server: server, port: port, host: host)
    }

    var host = "127.0.0.1"
    var base: String { "\(server.servesTLS ? "https" : "http")://\(host):\(port)" }
    func url(_ path: String) -> URL { URL(string: base + path)! }
    func stop() async { await server.shutdown() }

    /// Runs `body`, then stops the server whether `body` threw or not (a `defer { Task { … } }`
    /// may never run before the test process exits).
    func use<Result>(_ body: (Served) async throws -> Result) async throws -> Result {
        try await withCleanup(self, cleanup: { await $0.stop() }, body)
    }
}

/// A target that records every request it gets and answers with its body reversed.
final class RecordingTarget: HTTPResponder, @unchecked Sendable {
    let requests = Mutex<[HTTPServerRequest]>([])
    var status = 200

    func bodyLimit(method: String, path: String) -> Int { 8 << 20 }
    func endpointLabel(path: String) -> String { "any" }
    func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        requests.withLock { $0.append(request) }
        return HTTPServerResponse(status: status, contentType: "application/octet-stream", body: request.body.reversed(), headers: [("X-Target-Secret", "leak")])
    }
}

/// Answers 200 "slow" after `delay` (a responder busy for a while).
struct SlowResponder: HTTPResponder {
    let delay: Duration

    func bodyLimit(method: String, path: String) -> Int { 1024 }
    func endpointLabel(path: String) -> String { "slow" }
    func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        try? await Task.sleep(for: delay)
        return .text(200, "slow")
    }
}

/// Wraps a responder and records the bodies it is sent (what a relay or gateway sees).
final class Wiretap: HTTPResponder, @unchecked Sendable {
    let inner: any HTTPResponder
    let bodies = Mutex<[[UInt8]]>([])
    let headers = Mutex<[[(name: String, value: String)]]>([])
    /// The HTTP major version of each request (2: a stream of an HTTP/2 connection).
    let versions = Mutex<[Int]>([])

    init(_ inner: any HTTPResponder) { self.inner = inner }

    func bodyLimit(method: String, path: String) -> Int { inner.bodyLimit(method: method, path: path) }
    func endpointLabel(path: String) -> String { inner.endpointLabel(path: path) }
    func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        bodies.withLock { $0.append(request.body) }
        headers.withLock { $0.append(request.headers) }
        versions.withLock { $0.append(request.majorVersion) }
        return await inner.respond(to: request)
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs anywhere in these bytes.
    func contains(bytes needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        for start in 0...(count - needle.count) where self[start..<(start + needle.count)].elementsEqual(needle) { return true }
        return false
    }
}

/// How long the tests' HTTP clients wait for an in-process server. A healthy one answers in
/// milliseconds, but CI's first minute starves the task pool (and so the servers) for 60–90 s,
/// and the clients' 30 s default then fails tests that would pass.
let testClientTimeout: Double = 150
