import Foundation
import HTTPServing
import NetExtTestSupport
import Testing

/// HTTP/2 on the HTTP roles' server, checked with curl (libcurl with nghttp2: a peer nobody
/// here wrote): `h2` is chosen by ALPN on a TLS port, several requests share one connection, an
/// error answer ends its stream and not the connection, and HTTP/1.1 remains for clients that
/// ask for it and on plain ports.
@Suite("HTTP/2 on the HTTP roles (curl as the client)")
struct HTTP2ServingTests {
    /// Echoes bodies reversed; `/missing` is a 404.
    final class EchoTarget: HTTPResponder, @unchecked Sendable {
        func bodyLimit(method: String, path: String) -> Int { 1 << 20 }
        func endpointLabel(path: String) -> String { path == "/missing" ? "missing" : "echo" }
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
            if request.path == "/missing" { return .text(404, "no such path") }
            if request.path == "/host" { return .text(200, request.headerValues("host").joined(separator: ",")) }
            return HTTPServerResponse(status: 200, contentType: "application/octet-stream", body: request.body.reversed())
        }
    }

    /// What curl printed (`-w`) for each transfer, one line each; curl's exit status must be 0.
    /// curl runs on a thread of its own (`offPool`): waiting for it on the cooperative pool
    /// would starve the server's responders under test.
    static func curl(_ arguments: [String]) async throws -> [String] {
        let (status, text, problem) = try await offPool { try runCurl(arguments) }
        #expect(status == 0, "curl \(arguments.joined(separator: " ")) failed: \(problem)")
        return text.split(separator: "\n").map(String.init)
    }

    private static func runCurl(_ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        // 30 s: a debug server's TLS handshakes took over 10 s once with a build beside the suite.
        process.arguments = ["--silent", "--show-error", "--max-time", "30"] + arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        waitForExit(process, seconds: 30)
        return (process.terminationStatus, text, problem)
    }

    static let written = "%{http_version} %{response_code} %{num_connects}\\n"

    @Test func aTLSPortSpeaksHTTP2ToClientsThatOfferItAndKeepsTheConnectionAcrossAnErrorAnswer() async throws {
        try await TLSServingTests.withCertificates { certificates in
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(EchoTarget(), tls: tls).use { served in
                let lines = try await Self.curl([
                    "--http2", "--cacert", certificates.caFile, "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null",
                    "-w", Self.written,
                    served.base + "/a", served.base + "/missing", served.base + "/b", served.base + "/healthz",
                ])
                // One connection (only the first transfer connects), HTTP/2 throughout, and the
                // 404 did not close it.
                #expect(lines == ["2 200 1", "2 404 0", "2 200 0", "2 200 0"])

                let echoed = try await Self.curl(["--http2", "--cacert", certificates.caFile, "--data-binary", "netext", served.base + "/echo"])
                #expect(echoed == ["txeten"])
            }
        }
    }

    @Test("the authority reaches handlers as Host over both versions: HTTP/2's :authority becomes the Host field")
    func authorityAsHost() async throws {
        try await TLSServingTests.withCertificates { certificates in
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(EchoTarget(), tls: tls).use { served in
                let authority = String(served.base.dropFirst("https://".count))
                let overHTTP2 = try await Self.curl(["--http2", "--cacert", certificates.caFile, served.base + "/host"])
                let overHTTP1 = try await Self.curl(["--http1.1", "--cacert", certificates.caFile, served.base + "/host"])
                #expect(overHTTP2 == [authority])
                #expect(overHTTP1 == [authority])
            }
        }
    }

    @Test func http11RemainsForClientsThatAskForItAndOnPlainPorts() async throws {
        try await TLSServingTests.withCertificates { certificates in
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(EchoTarget(), tls: tls).use { served in
                let lines = try await Self.curl(["--http1.1", "--cacert", certificates.caFile, "-o", "/dev/null", "-w", Self.written, served.base + "/a"])
                #expect(lines == ["1.1 200 1"])
            }
            // A plain port: curl's h2c upgrade offer is ignored and HTTP/1.1 answers.
            try await Served.start(EchoTarget()).use { served in
                let lines = try await Self.curl(["--http2", "-o", "/dev/null", "-w", Self.written, served.base + "/a"])
                #expect(lines == ["1.1 200 1"])
            }
        }
    }

    @Test func requestsInFlightOnOneHTTP2ConnectionAreAnsweredConcurrently() async throws {
        try await TLSServingTests.withCertificates { certificates in
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(EchoTarget(), tls: tls).use { served in
                // curl multiplexes parallel transfers over one HTTP/2 connection.
                let urls = (0..<8).map { served.base + "/p\($0)" }
                let lines = try await Self.curl(
                    ["--http2", "--parallel", "--cacert", certificates.caFile, "-w", Self.written]
                        + urls.flatMap { ["-o", "/dev/null", $0] })
                #expect(lines.count == 8)
                #expect(lines.allSatisfy { $0.hasPrefix("2 200 ") }, "\(lines)")
                #expect(lines.filter { $0.hasSuffix(" 1") }.count <= 2, "each transfer opened its own connection: \(lines)")
            }
        }
    }
}
