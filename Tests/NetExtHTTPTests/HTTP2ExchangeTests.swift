import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
@testable import NetExtHTTP
import Testing

/// An HTTP/2 server over TLS (ALPN h2) on loopback that answers frame by frame and keeps what the
/// client sent: every frame's type per stream as it came off the wire (read below the server's
/// HTTP/2 handler, which passes on neither window updates nor resets of closed streams).
final class LoopbackHTTP2Server: Sendable {
    /// What came from clients, in order: (stream, frame kind) — "headers", "data", "rst:CODE",
    /// "window", "settings", "ping", "goaway", "other".
    let received = NIOLockedValueBox<[(stream: Int, kind: String)]>([])
    /// Request bodies by stream.
    let bodies = NIOLockedValueBox<[Int: Data]>([:])
    let connections = NIOLockedValueBox(0)
    let channel: any Channel
    var port: Int { channel.localAddress!.port! }
    /// The body `/large` answers with: 320 blocks of 64 KiB, each numbered in its first bytes (made
    /// with copies, not byte by byte: a debug build would hold the event loop for seconds).
    static let largeBody: Data = {
        let block = Data((0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 9)) })
        var body = Data(capacity: 320 * block.count)
        for index in 0..<320 {
            var numbered = block
            withUnsafeBytes(of: UInt32(index).bigEndian) { numbered.replaceSubrange(0..<4, with: $0) }
            body.append(numbered)
        }
        return body
    }()

    init(context: NIOSSLContext) async throws {
        let box = Box()
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    box.server?.connections.withLockedValue { $0 += 1 }
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.addHandler(FrameRecorder(box: box))
                    // Its own content-length checks off, so that /badlength can send a wrong one.
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server, contentLengthValidation: .disabled))
                    try channel.pipeline.syncOperations.addHandler(Responder(box: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        box.server = self
    }

    func close() async throws { try await channel.close() }

    /// The kinds of frames a stream carried from the client.
    func kinds(of stream: Int) -> [String] { received.withLockedValue { $0.filter { $0.stream == stream }.map(\.kind) } }
    var resets: [(stream: Int, kind: String)] { received.withLockedValue { $0.filter { $0.kind.hasPrefix("rst") } } }

    private final class Box: @unchecked Sendable { weak var server: LoopbackHTTP2Server? }

    /// Reads the client's frame headers (RFC 9113 §4.1) out of the decrypted bytes, after the
    /// 24-byte connection preface (§3.4), and passes the bytes on unchanged.
    private final class FrameRecorder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        let box: Box
        private var pending = ByteBuffer()
        private var prefaceLeft = 24
        init(box: Box) { self.box = box }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            pending.writeBuffer(&bytes)
            let skipped = min(prefaceLeft, pending.readableBytes)
            pending.moveReaderIndex(forwardBy: skipped)
            prefaceLeft -= skipped
            while prefaceLeft == 0, pending.readableBytes >= 9,
                let header = pending.getBytes(at: pending.readerIndex, length: 9) {
                let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                guard pending.readableBytes >= 9 + length else { break }
                let stream = Int(header[5] & 0x7f) << 24 | Int(header[6]) << 16 | Int(header[7]) << 8 | Int(header[8])
                let kind: String
                switch header[3] {
                case 0: kind = "data"
                case 1: kind = "headers"
                case 3: kind = "rst:\(pending.getInteger(at: pending.readerIndex + 9, as: UInt32.self) ?? 0)"
                case 4: kind = "settings"
                case 6: kind = "ping"
                case 7: kind = "goaway"
                case 8: kind = "window"
                default: kind = "other"
                }
                box.server?.received.withLockedValue { $0.append((stream, kind)) }
                pending.moveReaderIndex(forwardBy: 9 + length)
            }
            pending.discardReadBytes()
            context.fireChannelRead(data)
        }
    }

    private final class Responder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame
        let box: Box
        private var paths: [HTTP2StreamID: String] = [:]
        private var refused = false
        init(box: Box) { self.box = box }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            let stream = Int(Int32(frame.streamID))
            var ended = false
            switch frame.payload {
            case .headers(let headers):
                paths[frame.streamID] = headers.headers.first(name: ":path") ?? "/"
                ended = headers.endStream
            case .data(let payload):
                if case .byteBuffer(let buffer) = payload.data, buffer.readableBytes > 0 {
                    box.server?.bodies.withLockedValue { $0[stream, default: Data()].append(contentsOf: buffer.readableBytesView) }
                    // Without a multiplexer nothing opens the windows again but this handler.
                    let taken = buffer.readableBytes
                    if !payload.endStream {
                        context.write(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .windowUpdate(windowSizeIncrement: taken))), promise: nil)
                    }
                    context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: taken))), promise: nil)
                }
                ended = payload.endStream
            default: break
            }
            guard ended, let path = paths[frame.streamID] else { return }
            answer(path, stream: frame.streamID, context: context)
        }

        private func answer(_ path: String, stream: HTTP2StreamID, context: ChannelHandlerContext) {
            let body: ByteBuffer
            switch path {
            case "/never": return
            case "/reset":
                // RST_STREAM INTERNAL_ERROR (0x2) before any answer.
                context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .rstStream(.internalError))), promise: nil)
                return
            case "/badlength":
                // A body longer than its content-length: a stream error for the client (RFC 9113 §8.1.1).
                let head = HPACKHeaders([(":status", "200"), ("content-length", "3")])
                context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: head)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: "too long")), endStream: true)))), promise: nil)
                return
            case "/refuse-once" where !refused:
                // REFUSED_STREAM (0x7): not processed, so the client may send it again (§8.7).
                refused = true
                context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .rstStream(.refusedStream))), promise: nil)
                return
            case "/goaway" where Int32(stream) > 1:
                // The connection goes away with this stream not taken (RFC 9113 §6.8).
                let last = HTTP2StreamID(Int32(stream) - 2)
                context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: .noError, opaqueData: nil))), promise: nil)
                return
            case "/large": body = ByteBuffer(bytes: LoopbackHTTP2Server.largeBody)
            case "/echo":
                let sent = box.server?.bodies.withLockedValue { $0[Int(Int32(stream))] } ?? Data()
                body = ByteBuffer(bytes: sent)
            default: body = ByteBuffer(string: "h2 answer for \(path)")
            }
            let head = HPACKHeaders([(":status", "200"), ("content-length", "\(body.readableBytes)")])
            context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: head)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true)))), promise: nil)
        }
    }
}

@Suite("HTTP/2 exchanges")
struct HTTP2ExchangeTests {
    /// Runs `body` with a server and a session that trusts its CA, both closed (and the
    /// certificates removed) afterwards, also when `body` fails.
    func withServer(_ body: (LoopbackHTTP2Server, NetExtHTTP.URLSession) async throws -> Void) async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await LoopbackHTTP2Server(context: try certificates.serverContext(applicationProtocols: ["h2"]))
        var configuration = NetExtHTTP.URLSessionConfiguration.ephemeral
        configuration.trust = try HTTPTrust.pemFile(certificates.caFile)
        let session = NetExtHTTP.URLSession(configuration: configuration)
        do { try await body(server, session) } catch {
            await session.invalidateAndCancel()
            try? await server.close()
            throw error
        }
        await session.invalidateAndCancel()
        try await server.close()
    }

    @Test("loads one after another and at once share one connection; a stream both ends closed is never reset (RFC 9113 §5.1)")
    func sequentialAndConcurrent() async throws {
        try await withServer { server, session in
            for index in 0..<20 {
                let (data, response) = try await session.data(from: URL(string: "https://127.0.0.1:\(server.port)/one/\(index)")!)
                #expect(response.statusCode == 200 && String(decoding: data, as: UTF8.self) == "h2 answer for /one/\(index)")
                #expect(response.metrics.networkProtocolName == "h2")
            }
            let answers = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let (data, _) = try await session.data(from: URL(string: "https://127.0.0.1:\(server.port)/many/\(index)")!)
                        return String(decoding: data, as: UTF8.self) == "h2 answer for /many/\(index)"
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(answers.count == 50 && answers.allSatisfy { $0 })
            #expect(await session.connectionsOpened == 1 && server.connections.withLockedValue { $0 } == 1)
            // Let any late frame arrive before looking.
            try await Task.sleep(for: .milliseconds(100))
            #expect(server.resets.isEmpty, "resets: \(server.resets)")
            #expect(server.received.withLockedValue { $0.filter { $0.kind == "headers" }.count } == 70)
        }
    }

    @Test("a 20 MiB answer arrives whole, the client opening the windows as it reads; an upload's body arrives intact")
    func flowControlAndUpload() async throws {
        try await withServer { server, session in
            let expected = LoopbackHTTP2Server.largeBody  // made here, not on the server's event loop
            let (data, _) = try await session.data(from: URL(string: "https://127.0.0.1:\(server.port)/large")!)
            #expect(data.count == expected.count && data == expected)
            // 20 MiB is more than a stream's 8 MiB and the connection's 16 MiB: both were opened again.
            #expect(server.kinds(of: 1).contains("window"), "\(server.kinds(of: 1))")
            #expect(server.kinds(of: 0).contains("window"))

            var request = URLRequest(url: URL(string: "https://127.0.0.1:\(server.port)/echo")!)
            request.httpMethod = "POST"
            let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let (echoed, response) = try await session.upload(for: request, from: body)
            #expect(response.statusCode == 200 && echoed == body)
            #expect(server.kinds(of: 3).first == "headers" && server.kinds(of: 3).filter { $0 == "data" }.count >= 2)
            #expect(server.resets.isEmpty, "resets: \(server.resets)")
        }
    }

    @Test("an answer that never comes times out and its stream is reset with CANCEL; the connection carries the next load")
    func timeoutResets() async throws {
        try await withServer { server, session in
            var never = URLRequest(url: URL(string: "https://127.0.0.1:\(server.port)/never")!)
            never.timeoutInterval = 0.3
            await #expect(throws: HTTPLoadError.timedOut(url: never.url.absoluteString, seconds: 0.3)) { _ = try await session.data(for: never) }
            let (data, _) = try await session.data(from: URL(string: "https://127.0.0.1:\(server.port)/after")!)
            #expect(String(decoding: data, as: UTF8.self) == "h2 answer for /after")
            try await Task.sleep(for: .milliseconds(100))
            // RST_STREAM CANCEL is error code 0x8 (RFC 9113 §7).
            #expect(server.resets.map(\.stream) == [1] && server.resets.first?.kind == "rst:8", "\(server.resets)")
            #expect(await session.connectionsOpened == 1)
        }
    }

    @Test("a stream the server resets fails naming the reset, one that breaks the protocol is reset alone; a refused stream is sent again; a GOAWAY that leaves a load untaken sends it again on a new connection")
    func resetsAndGoAway() async throws {
        try await withServer { server, session in
            do {
                _ = try await session.data(from: URL(string: "https://127.0.0.1:\(server.port)/reset")!)
                Issue.record("a reset stream loaded")
            } catch {
                #expect("\(error)".contains("reset its HTTP/2 stream") && "\(error)".contains("INTERNAL_ERROR"), "\(error)")
            }
            // A body longer than its content-length fails its load alone: the client resets the
            // stream with PROTOCOL_ERROR (0x1) and the connection lives on.
            do {
                _ = try await session.data(from: URL(string: "https://127.0.0.1:\(server.port)/badlength")!)
                Issue.record("a body longer than its content-length loaded")
            } catch {
                #expect("\(error)".contains("PROTOCOL_ERROR"), "\(error)")
            }
            try await Task.sleep(for: .milliseconds(50))
            #expect(server.resets.map(\.kind) == ["rst:1"] && server.resets.first?.stream == 3, "\(server.resets)")
            let (data, _) = try await session.data(from: URL(string: "https://127.0.0.1:\(server.port)/fine")!)
            #expect(String(decoding: data, as: UTF8.self) == "h2 answer for /fine")
            #expect(await session.connectionsOpened == 1)
            // REFUSED_STREAM: sent again, on the same connection (streams 7, then 9).
            let (refusedOnce, _) = try await session.data(from: URL(string: "https://127.0.0.1:\(server.port)/refuse-once")!)
            #expect(String(decoding: refusedOnce, as: UTF8.self) == "h2 answer for /refuse-once")
            #expect(await session.connectionsOpened == 1 && server.resets.count == 1)
            // Stream 11 is refused by a GOAWAY naming stream 9 as the last taken: tried once more, on stream 1
            // of a second connection, which answers it.
            let (again, _) = try await session.data(from: URL(string: "https://127.0.0.1:\(server.port)/goaway")!)
            #expect(String(decoding: again, as: UTF8.self) == "h2 answer for /goaway")
            #expect(await session.connectionsOpened == 2 && server.connections.withLockedValue { $0 } == 2)
        }
    }

    @Test("a request head as HTTP/2 fields: pseudo-header fields first, names in lower case, no connection-specific fields (RFC 9113 §8.2.2, §8.3.1)")
    func requestFields() {
        var headers = HTTPHeaders([
            ("Host", "example.test:8443"), ("Accept", "*/*"), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"),
            ("Keep-Alive", "timeout=5"), ("TE", "gzip"), ("X-Custom", "Value"),
        ])
        var fields = HTTP2Exchanges.requestHeaders(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a?b=c", headers: headers))
        #expect(fields.map(\.name) == [":method", ":scheme", ":authority", ":path", "accept", "x-custom"])
        #expect(fields.first(name: ":authority") == "example.test:8443" && fields.first(name: ":path") == "/a?b=c")
        #expect(fields.first(name: "x-custom") == "Value")
        headers.replaceOrAdd(name: "TE", value: "trailers")
        fields = HTTP2Exchanges.requestHeaders(HTTPRequestHead(version: .http1_1, method: .POST, uri: "/", headers: headers))
        #expect(fields.first(name: ":method") == "POST" && fields.first(name: "te") == "trailers")
    }
}
