import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import NetExtHTTP

/// A line server on 127.0.0.1: greets with "220 hello\r\n", echoes what it reads, answers
/// "STARTTLS\r\n" with "220 go\r\n" and then speaks TLS with `certificate`; closes when the
/// client closes its side.
final class StartTLSServer: Sendable {
    let channel: any Channel
    var port: Int { channel.localAddress!.port! }

    init(context: NIOSSLContext) async throws {
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(LineEcho(context: context)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func close() async throws { try await channel.close() }

    private final class LineEcho: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let context: NIOSSLContext
        var secure = false
        init(context: NIOSSLContext) { self.context = context }

        func channelActive(context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "220 hello\r\n")), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = unwrapInboundIn(data)
            if !secure && String(buffer: bytes) == "STARTTLS\r\n" {
                secure = true
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "220 go\r\n")), promise: nil)
                try? context.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: self.context), position: .first)
                return
            }
            context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case ChannelEvent.inputClosed = event { context.close(promise: nil) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
}

/// A throw-away CA and a P-256 certificate for 127.0.0.1, made with openssl.
struct TestCertificates {
    let directory: URL
    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("streamtask-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = """
            set -e; cd '\(directory.path)'
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca 2>/dev/null
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1 2>/dev/null
            printf 'subjectAltName=IP:127.0.0.1\\n' > leaf.ext
            openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -sha256 -extfile leaf.ext -out leaf.pem 2>/dev/null
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CertificateFactsError("openssl could not make the test certificates") }
    }
    var caFile: String { directory.appendingPathComponent("ca.pem").path }
    /// The server's TLS, offering `applicationProtocols` by ALPN (none by default).
    func serverContext(applicationProtocols: [String] = []) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(directory.appendingPathComponent("leaf.pem").path).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: directory.appendingPathComponent("leaf.key").path, format: .pem)))
        configuration.applicationProtocols = applicationProtocols
        return try NIOSSLContext(configuration: configuration)
    }
    func remove() { try? FileManager.default.removeItem(at: directory) }
}

@Suite("Stream tasks")
struct StreamTaskTests {
    @Test("reads take at least min and at most max bytes; a read that cannot be met times out and loses nothing")
    func reads() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await StartTLSServer(context: try certificates.serverContext())
        let task = URLSession(configuration: .ephemeral).streamTask(withHostName: "127.0.0.1", port: server.port)
        let (first, eof) = try await task.readData(ofMinLength: 1, maxLength: 4, timeout: 5)
        #expect(String(decoding: first, as: UTF8.self) == "220 " && !eof)
        do {
            _ = try await task.readData(ofMinLength: 100, maxLength: 200, timeout: 0.2)
            Issue.record("a read of 100 bytes was met")
        } catch {
            #expect(error == .timedOut(url: "127.0.0.1:\(server.port)", seconds: 0.2))
        }
        let (rest, _) = try await task.readData(ofMinLength: 7, maxLength: 100, timeout: 5)
        #expect(String(decoding: rest, as: UTF8.self) == "hello\r\n")
        try await task.write(Data("ping\r\n".utf8), timeout: 5)
        #expect(String(decoding: try await task.readData(ofMinLength: 6, maxLength: 6, timeout: 5).0, as: UTF8.self) == "ping\r\n")
        task.cancel()
        try await server.close()
    }

    @Test("closing the write side makes the peer close: the read reports end of file, the events say both")
    func halfClose() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await StartTLSServer(context: try certificates.serverContext())
        let task = URLSession(configuration: .ephemeral).streamTask(withHostName: "127.0.0.1", port: server.port)
        _ = try await task.readData(ofMinLength: 11, maxLength: 11, timeout: 5)
        task.closeWrite()
        let (data, eof) = try await task.readData(ofMinLength: 1, maxLength: 10, timeout: 5)
        #expect(data.isEmpty && eof)
        var events: [URLSessionStreamTask.Event] = []
        for await event in task.events { events.append(event) }
        #expect(events.contains(.writeClosed) && events.contains(.readClosed))
        try await server.close()
    }

    @Test("STARTTLS: TLS started on the open connection, held to ATS and the session's trust")
    func startTLS() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await StartTLSServer(context: try certificates.serverContext())
        var configuration = URLSessionConfiguration.ephemeral
        configuration.trust = try HTTPTrust.pemFile(certificates.caFile)
        let task = URLSession(configuration: configuration).streamTask(withHostName: "127.0.0.1", port: server.port)
        _ = try await task.readData(ofMinLength: 11, maxLength: 11, timeout: 5)
        try await task.write(Data("STARTTLS\r\n".utf8), timeout: 5)
        #expect(String(decoding: try await task.readData(ofMinLength: 8, maxLength: 8, timeout: 5).0, as: UTF8.self) == "220 go\r\n")
        try await task.startSecureConnection()
        try await task.write(Data("secret\r\n".utf8), timeout: 5)
        #expect(String(decoding: try await task.readData(ofMinLength: 8, maxLength: 8, timeout: 5).0, as: UTF8.self) == "secret\r\n")
        task.cancel()
        var events: [URLSessionStreamTask.Event] = []
        for await event in task.events { events.append(event) }
        #expect(events.contains(.secureConnectionStarted(tlsVersion: "TLS 1.3")))

        // The machine's CAs do not know the test CA: TLS fails, and says why.
        let untrusted = URLSession(configuration: .ephemeral).streamTask(withHostName: "127.0.0.1", port: server.port)
        _ = try await untrusted.readData(ofMinLength: 11, maxLength: 11, timeout: 5)
        try await untrusted.write(Data("STARTTLS\r\n".utf8), timeout: 5)
        _ = try await untrusted.readData(ofMinLength: 8, maxLength: 8, timeout: 5)
        do {
            try await untrusted.startSecureConnection()
            Issue.record("TLS with an unknown CA started")
        } catch {
            guard case .tlsFailed = error else { Issue.record("\(error)"); return }
        }
        try await server.close()
    }
}

/// Runs blocking work on a thread of its own (Foundation streams block their caller).
func onThread<Result: Sendable>(_ work: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}

@Suite("Captured streams")
struct CapturedStreamsTests {
    @Test("captureStreams hands the connection to Foundation streams: reads block for bytes, writes reach the peer, closing the output ends the exchange; the task's own reads stop")
    func captured() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await StartTLSServer(context: try certificates.serverContext())
        let task = URLSession(configuration: .ephemeral).streamTask(withHostName: "127.0.0.1", port: server.port)
        let (input, output) = try await task.captureStreams()
        nonisolated(unsafe) let streams = (input, output)
        let transcript = await onThread { () -> [String] in
            let (input, output) = streams
            input.open()
            output.open()
            var lines: [String] = []
            var buffer = [UInt8](repeating: 0, count: 64)
            var greeting: [UInt8] = []
            while greeting.count < 11 {
                let count = input.read(&buffer, maxLength: 11 - greeting.count)
                guard count > 0 else { break }
                greeting += buffer[0..<count]
            }
            lines.append(String(decoding: greeting, as: UTF8.self))
            lines.append("\(output.write(Array("ping\r\n".utf8), maxLength: 6))")
            var echo: [UInt8] = []
            while echo.count < 6 {
                let count = input.read(&buffer, maxLength: 6 - echo.count)
                guard count > 0 else { break }
                echo += buffer[0..<count]
            }
            lines.append(String(decoding: echo, as: UTF8.self))
            output.close()  // the server closes when the client's side ends
            lines.append("\(input.read(&buffer, maxLength: 64)) \(input.streamStatus == .atEnd)")
            return lines
        }
        #expect(transcript == ["220 hello\r\n", "6", "ping\r\n", "0 true"])
        await #expect(throws: HTTPLoadError.self) { _ = try await task.readData(ofMinLength: 1, maxLength: 1, timeout: 1) }
        await #expect(throws: HTTPLoadError.invalidConfiguration("the stream task's streams were captured already")) { _ = try await task.captureStreams() }
        try await server.close()
    }
}
