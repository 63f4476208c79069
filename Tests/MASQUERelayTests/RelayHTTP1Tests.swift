import Foundation
import HTTPFetching
import HTTPServing
import Logging
import MASQUERelay
import NetExtTestSupport
import Testing

/// The relay's HTTP/1.1 side, driven by curl (Debian's, not NetExt's code) as an HTTPS proxy
/// client: `--proxy https://…` with `--proxytunnel` makes it CONNECT over TLS with ALPN
/// http/1.1, then speak HTTP to the target through the tunnel. The target is an HTTP server on
/// loopback.
@Suite("MASQUE relay: HTTP/1.1 CONNECT (curl as the client)", .serialized)
struct RelayHTTP1Tests {
    /// `/` answers a line; `/large` 8 MiB of a repeating pattern.
    struct Target: HTTPResponder {
        static let large = [UInt8]((0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        func bodyLimit(method: String, path: String) -> Int { 0 }
        func endpointLabel(path: String) -> String { path }
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
            request.path == "/large" ? HTTPServerResponse(contentType: "application/octet-stream", body: Self.large) : .text(200, "through the relay")
        }
    }

    static func curl(_ arguments: [String]) async throws -> (status: Int32, output: Data, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "--max-time", "20", "--proxytunnel"] + arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let (data, text) = try await offPool {
            (output.fileHandleForReading.readDataToEndOfFile(), String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        process.waitUntilExit()
        return (process.terminationStatus, data, text)
    }

    static func withTarget(_ body: (Int) async throws -> Void) async throws {
        let server = HTTPServer(responder: Target(), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let port = try await server.start(host: "127.0.0.1", port: 0)
        do { try await body(port) } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    @Test("curl through the relay's CONNECT: a page, 8 MiB intact, and the relay's refusals as curl reports them (407 without the token, 403 outside the allowed destinations)")
    func curlThroughTheRelay() async throws {
        try await RelayServerTests.withRelay(allow: ["127.0.0.1/32"], tokens: ["curl-token"]) { relay, _, certificates in
            try await Self.withTarget { port in
                let proxy = ["--proxy", "https://127.0.0.1:\(relay.port)", "--proxy-cacert", certificates.caFile]
                let token = ["--proxy-header", "Proxy-Authorization: Bearer curl-token"]
                let page = try await Self.curl(proxy + token + ["http://127.0.0.1:\(port)/"])
                #expect(page.status == 0 && String(decoding: page.output, as: UTF8.self) == "through the relay\n", "\(page.errors)")
                let large = try await Self.curl(proxy + token + ["http://127.0.0.1:\(port)/large"])
                #expect(large.status == 0, "\(large.errors)")
                #expect(large.output.count == Target.large.count && Array(large.output) == Target.large, "\(large.output.count) bytes")
                #expect(relay.counters.current.tcpStreams == 2)

                let unauthorized = try await Self.curl(proxy + ["http://127.0.0.1:\(port)/"])
                #expect(unauthorized.status != 0 && unauthorized.errors.contains("407"), "\(unauthorized.errors)")
                let forbidden = try await Self.curl(proxy + token + ["http://127.0.0.2:\(port)/"])
                #expect(forbidden.status != 0 && forbidden.errors.contains("403"), "\(forbidden.errors)")
                #expect(relay.counters.current.unauthorized == 1 && relay.counters.current.forbidden == 1)
            }
        }
    }
}
