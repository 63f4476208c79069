import Foundation
import HTTPFetching
import HTTPServing
import NetExtTestSupport
import Testing

/// NetExt's HTTP/2 layer frame by frame, with nghttp (nghttp2's client, a peer nobody here
/// wrote, which prints every frame it sends and receives): an answer given before the request
/// was read whole is followed by RST_STREAM with NO_ERROR and the connection goes on (RFC 9113
/// §8.1), while the rest of a small body is read and dropped, since AsyncHTTPClient takes that
/// reset as a failure; a shutdown sends GOAWAY naming the last stream and answers it first (§6.8); a HEAD
/// answer carries no body (curl).
@Suite("HTTP/2 streams and shutdown, frame by frame (nghttp as the client)")
struct HTTP2FrameTests {
    struct Missing: Error, CustomStringConvertible {
        var description: String { "nghttp is not installed (scripts/lib/install-packages.sh installs nghttp2-client)" }
    }

    /// nghttp's exit status and its verbose output (`-v`: every frame), bodies discarded.
    static func nghttp(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/nghttp") else { throw Missing() }
        return try await offPool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/nghttp")
            process.arguments = ["--null-out", "--verbose", "--timeout=30s"] + arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            waitForExit(process, seconds: 30)
            return (process.terminationStatus, text)
        }
    }

    /// One frame nghttp printed: its first line (`recv GOAWAY frame <… stream_id=0>`) and the
    /// detail line under it (`(last_stream_id=1, error_code=NO_ERROR(0x00), …)`).
    struct Frame {
        let direction: String
        let type: String
        let stream: Int
        let detail: String

        /// The number after `name=` in the frame's line or detail.
        func value(_ name: String) -> Int? {
            guard let range = (detail + " " + type).range(of: name + "=") else { return nil }
            return Int((detail + " " + type)[range.upperBound...].prefix { $0.isNumber })
        }
    }

    /// The frames in nghttp's verbose output.
    static func frames(_ output: String) -> [Frame] {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var frames: [Frame] = []
        for (index, line) in lines.enumerated() {
            guard let kind = line.range(of: "] send ") ?? line.range(of: "] recv "), line.contains(" frame <") else { continue }
            let words = line[kind.upperBound...].split(separator: " ")
            guard let type = words.first, let stream = line.range(of: "stream_id=").flatMap({ Int(line[$0.upperBound...].prefix { $0.isNumber }) })
            else { continue }
            let detail = index + 1 < lines.count ? lines[index + 1].trimmingCharacters(in: .whitespaces) : ""
            frames.append(Frame(direction: line.contains("] send ") ? "send" : "recv", type: String(type), stream: stream, detail: detail))
        }
        return frames
    }

    /// The statuses nghttp received, by stream (`recv (stream_id=13) :status: 413`).
    static func statuses(_ output: String) -> [Int: Int] {
        var statuses: [Int: Int] = [:]
        for line in output.split(separator: "\n") {
            guard let at = line.range(of: "recv (stream_id="), let mark = line.range(of: ") :status: ") else { continue }
            if let stream = Int(line[at.upperBound..<mark.lowerBound]), let status = Int(line[mark.upperBound...].prefix(3)) {
                statuses[stream] = status
            }
        }
        return statuses
    }

    /// The streams of the requests nghttp sent (HEADERS frames that open one).
    static func requestStreams(_ frames: [Frame]) -> [Int] {
        frames.filter { $0.direction == "send" && $0.type == "HEADERS" }.map(\.stream)
    }

    @Test func aBodyPastTheLimitIsAnsweredEarlyTheStreamResetWithoutErrorAndTheConnectionGoesOn() async throws {
        try await TLSServingTests.withCertificates { certificates in
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            let body = NSTemporaryDirectory() + "netext-h2-body-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: body) }
            // 3 MiB against the 1 MiB limit: far more than the stream's window, so the client is
            // still sending when the answer comes.
            try Data(repeating: 0x61, count: 3 << 20).write(to: URL(fileURLWithPath: body))
            try await Served.start(HTTP2ServingTests.EchoTarget(), tls: tls).use { served in
                let (status, output) = try await Self.nghttp(["--data=" + body, served.base + "/a", served.base + "/b"])
                let frames = Self.frames(output)
                let streams = Self.requestStreams(frames)
                #expect(streams.count == 2, "nghttp did not send two requests: \(output.suffix(2000))")
                for stream in streams {
                    #expect(Self.statuses(output)[stream] == 413, "stream \(stream): \(Self.statuses(output))")
                    let reset = frames.first { $0.direction == "recv" && $0.type == "RST_STREAM" && $0.stream == stream }
                    #expect(reset?.detail.contains("NO_ERROR") == true, "stream \(stream) was not reset with NO_ERROR: \(String(describing: reset))")
                }
                // Both on one connection: the first reset did not end it.
                #expect(!frames.contains { $0.direction == "recv" && $0.type == "GOAWAY" }, "the server ended the connection")
                #expect(status == 0 || status == 1, "nghttp: \(status)")  // 1: nghttp counts 4xx answers as failures
                #expect(served.server.bufferedBodyBytes == 0, "the refused bodies are still held")
            }
        }
    }

    /// Refuses every request on its head, as the PIR server does one without a token.
    struct Refusing: HTTPResponder {
        func bodyLimit(method: String, path: String) -> Int { 1 << 20 }
        func endpointLabel(path: String) -> String { "any" }
        func admit(method: String, path: String, headers: [(name: String, value: String)]) -> HTTPServerResponse? {
            .text(401, "token required", headers: [("WWW-Authenticate", "PrivateToken challenge=\"AAA\"")])
        }
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse { .text(200, "never") }
    }

    @Test func aRefusalOnTheHeadReachesAsyncHTTPClientWholeAndALargeBodyIsStoppedWithoutError() async throws {
        try await TLSServingTests.withCertificates { certificates in
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(Refusing(), tls: tls).use { served in
                // A query-sized body, over HTTP/2: the 401 and its challenge arrive, every time,
                // on the pooled connection.
                let upstream = HTTPUpstream(timeout: 30, tls: try ClientTLS(caFile: certificates.caFile))
                for _ in 0..<20 {
                    let answer = try await upstream.exchange(
                        method: "POST", url: served.url("/queries"), headers: [("Content-Type", "application/octet-stream")],
                        body: [UInt8](repeating: 7, count: 28 * 1024))
                    #expect(answer.status == 401)
                    #expect(answer.headers.contains { $0.name.lowercased() == "www-authenticate" })
                    #expect(String(decoding: answer.body, as: UTF8.self).contains("token required"))
                }
                // 3 MiB: past what is read and dropped, so the stream is reset, without error.
                let body = NSTemporaryDirectory() + "netext-h2-refused-\(UUID().uuidString)"
                defer { try? FileManager.default.removeItem(atPath: body) }
                try Data(repeating: 0x61, count: 3 << 20).write(to: URL(fileURLWithPath: body))
                let (_, output) = try await Self.nghttp(["--data=" + body, served.base + "/queries"])
                let frames = Self.frames(output)
                let stream = try #require(Self.requestStreams(frames).first, "nghttp sent no request: \(output.suffix(2000))")
                #expect(Self.statuses(output)[stream] == 401)
                let reset = frames.first { $0.direction == "recv" && $0.type == "RST_STREAM" && $0.stream == stream }
                #expect(reset?.detail.contains("NO_ERROR") == true, "\(output.suffix(2000))")
                #expect(served.server.bufferedBodyBytes == 0)
            }
        }
    }

    @Test func aShutdownSendsGoAwayNamingTheStreamInFlightAndAnswersItFirst() async throws {
        try await TLSServingTests.withCertificates { certificates in
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            var limits = HTTPServerLimits()
            limits.requestDeadline = 60
            limits.drainDeadline = 10
            let served = try await Served.start(SlowResponder(delay: .milliseconds(1500)), tls: tls, limits: limits)
            let sent = Date()
            let client = Task { try await Self.nghttp([served.base + "/slow"]) }
            // The request is in (on a quiet machine within milliseconds).
            let waitUntil = Date().addingTimeInterval(20)
            while served.server.openConnections == 0, Date() < waitUntil {
                try await Task.sleep(for: .milliseconds(20))
            }
            try await Task.sleep(for: .milliseconds(300))
            let began = Date()
            await served.stop()
            let shutdownSeconds = Date().timeIntervalSince(began)
            let answeredSeconds = Date().timeIntervalSince(sent)
            let (_, output) = try await client.value
            let frames = Self.frames(output)
            let stream = try #require(Self.requestStreams(frames).first, "nghttp sent no request: \(output.suffix(2000))")
            #expect(Self.statuses(output)[stream] == 200, "the request in flight was cut off: \(output.suffix(2000))")
            let goAway = try #require(frames.first { $0.direction == "recv" && $0.type == "GOAWAY" }, "no GOAWAY: \(output.suffix(2000))")
            #expect(goAway.value("last_stream_id") == stream)
            #expect(goAway.detail.contains("NO_ERROR"))
            // The drain waited for the answer (1.5 s from the request, sent after `sent`) and not
            // for the deadlines (the bound leaves room for a task pool starved by the whole run).
            #expect(answeredSeconds >= 1.5, "shutdown ended \(answeredSeconds) s after the request: it did not wait for the answer")
            #expect(shutdownSeconds < 60, "shutdown took \(shutdownSeconds) s")
        }
    }

    @Test func aHEADAnswerHasTheLengthAndNoBody() async throws {
        try await TLSServingTests.withCertificates { certificates in
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(HTTP2ServingTests.EchoTarget(), tls: tls).use { served in
                let lines = try await HTTP2ServingTests.curl([
                    "--http2", "--head", "--cacert", certificates.caFile, "-w", "%{http_version} %{response_code} %{size_download}\\n", served.base + "/healthz",
                ])
                // The head (its lines end in CR LF, one Character in Swift: `curl` did not split
                // them), then the -w line: nothing downloaded.
                let text = lines.joined(separator: "\n").lowercased()
                #expect(text.hasSuffix("\r\n2 200 0"), "\(text)")
                // "ok\n" is 3 bytes: the length of the GET answer, no body sent.
                #expect(text.contains("content-length: 3\r\n"), "\(text)")
                #expect(!text.contains("connection:"), "a connection-specific field on HTTP/2: \(text)")
            }
        }
    }
}
