import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import Synchronization

/// The loads of one HTTP/2 connection, each on a stream of its own (RFC 9113 §5), handled as
/// frames right behind `NIOHTTP2Handler`: a request's HEADERS and DATA written with the stream's
/// ID, its answer's frames gathered by an ``AnswerAssembly``. No channel per stream: a load costs
/// a table entry, not a child channel with its pipeline and an HTTP/1 translation both ways.
///
/// Flow control (RFC 9113 §6.9) is this handler's: every stream starts with the window the
/// connection's settings announce (``streamWindow``), the connection's is raised to
/// ``connectionWindow`` at once, and each is opened again (WINDOW_UPDATE) once half of it has been
/// read. Answers are taken as they come (held or written to a sink), so reading is consuming.
final class HTTP2Exchanges: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: everything but `acceptsStreams` is touched only on the channel's event loop.
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// How far ahead of the bodies read the server may send on the connection as a whole.
    static let connectionWindow = 16 << 20
    /// How far ahead of its body read the server may send on each stream: the window every
    /// stream starts with, announced as SETTINGS_INITIAL_WINDOW_SIZE (RFC 9113 §6.9.2).
    static let streamWindow = 8 << 20

    private struct Exchange {
        var assembly: AnswerAssembly
        /// Bytes of DATA read on the stream since its window was last opened.
        var unacknowledged = 0
        /// Whether the request's last frame (END_STREAM) has been written.
        var requestEnded = false
    }

    private var context: ChannelHandlerContext?
    private var exchanges: [HTTP2StreamID: Exchange] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    private var connectionUnacknowledged = 0
    /// The last error the pipeline reported, named when the connection then closes.
    private var lastError: (any Error)?
    /// False once the server has sent GOAWAY or the stream IDs are used up: the pool opens
    /// another connection for later loads. Read from any thread.
    let acceptsStreams = Atomic<Bool>(true)

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // The connection's window starts at 65,535 bytes whatever the settings say (§6.9.2).
        let raise = Self.connectionWindow - 65_535
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: raise))), promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        failAll { ConnectionClosedBeforeAnswer(url: $0.assembly.url) }
    }

    /// Opens a stream for `request` and answers `promise` with the response. Call on the event
    /// loop. A load that fails from outside (its timer) resets its stream with CANCEL.
    func send(_ request: PreparedRequest, limit: Int, sink: BodySink?, activity: AnswerActivity?, promise: EventLoopPromise<RawResponse>) {
        guard let context, context.channel.isActive, acceptsStreams.load(ordering: .relaxed) else {
            promise.fail(ConnectionClosedBeforeAnswer(url: request.url))
            return
        }
        let streamID = nextStreamID
        nextStreamID = streamID.advanced(by: 2)
        // Client streams are odd and never reused (§5.1.1); the last ones go to a new connection.
        if Int32(nextStreamID) >= Int32.max - 2 { acceptsStreams.store(false, ordering: .relaxed) }
        exchanges[streamID] = Exchange(assembly: AnswerAssembly(promise: promise, url: request.url, limit: limit, sink: sink, activity: activity))
        promise.futureResult.whenFailure { [self] _ in reset(streamID) }

        let hasBody = request.body != nil || request.bodyFile != nil
        let headers = HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: Self.requestHeaders(request.head), endStream: !hasBody)))
        let opened = context.eventLoop.makePromise(of: Void.self)
        let channel = context.channel
        opened.futureResult.whenFailure { [self] error in
            let failure: any Error = channel.isActive
                ? HTTPLoadError.badServerResponse(url: request.url, reason: "its HTTP/2 stream could not be opened (\(error))")
                : ConnectionClosedBeforeAnswer(url: request.url)
            // Never opened, so nothing to reset (an RST_STREAM on an idle stream is an error).
            exchanges.removeValue(forKey: streamID)?.assembly.promise.fail(failure)
        }
        context.write(wrapOutboundOut(headers), promise: opened)
        if var body = request.body {
            // In 64 KiB DATA frames, each reported once written when the load wants progress
            // (NIOHTTP2Handler holds back what the server's windows do not yet allow).
            let total = Int64(body.readableBytes)
            var sent: Int64 = 0
            let slice = request.uploadProgress == nil ? max(1, body.readableBytes) : 64 << 10
            repeat {
                let part = body.readSlice(length: min(slice, body.readableBytes))!
                sent += Int64(part.readableBytes)
                let last = body.readableBytes == 0
                let frame = HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(part), endStream: last)))
                if let progress = request.uploadProgress {
                    let count = sent
                    context.write(wrapOutboundOut(frame)).whenSuccess { progress(count, total) }
                } else {
                    context.write(wrapOutboundOut(frame), promise: nil)
                }
            } while body.readableBytes > 0
        } else if let file = request.bodyFile {
            context.flush()
            FileBodySender.open(
                file, allocator: context.channel.allocator, progress: request.uploadProgress,
                isCurrent: { [self] in context.channel.isActive && exchanges[streamID]?.assembly.promise.futureResult === promise.futureResult },
                write: { [self] chunk in context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(chunk)))))) },
                end: { [self] in
                    exchanges[streamID]?.requestEnded = true
                    context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(ByteBuffer()), endStream: true)))), promise: nil)
                },
                fail: { [self] error in fail(streamID, with: error) })
            return
        }
        exchanges[streamID]?.requestEnded = true
        context.flush()
    }

    /// A request's head as HTTP/2 fields (RFC 9113 §8.3.1): the pseudo-header fields first, then
    /// the others as NIOHPACK normalises them (lower case, without the connection-specific fields
    /// §8.2.2 forbids), less those the Connection field names, Host (sent as `:authority`) and any
    /// TE but "trailers".
    static func requestHeaders(_ head: HTTPRequestHead) -> HPACKHeaders {
        var regular = HPACKHeaders(httpHeaders: head.headers, normalizeHTTPHeaders: true)
        // NIOHPACK matches the names Connection lists by case; HTTP field names have none.
        for nominated in head.headers[canonicalForm: "connection"] { regular.remove(name: nominated.lowercased()) }
        regular.remove(name: "host")
        if let te = regular.first(name: "te"), te.lowercased() != "trailers" { regular.remove(name: "te") }
        var fields = HPACKHeaders([
            (":method", head.method.rawValue), (":scheme", "https"), (":authority", head.headers.first(name: "host") ?? ""), (":path", head.uri),
        ])
        fields.add(contentsOf: regular)
        return fields
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            guard exchanges[frame.streamID] != nil else { return }
            if !exchanges[frame.streamID]!.assembly.hasHead {
                guard let head = Self.responseHead(headers.headers) else {
                    fail(frame.streamID, with: HTTPLoadError.badServerResponse(url: exchanges[frame.streamID]!.assembly.url, reason: "its HTTP/2 answer had no valid :status"))
                    return
                }
                if let failure = exchanges[frame.streamID]!.assembly.received(head) {
                    fail(frame.streamID, with: failure)
                    return
                }
            }
            // A HEADERS after the head is a trailer section (§8.1), not kept.
            if headers.endStream { finish(frame.streamID) }
        case .data(let payload):
            // Padding counts against the windows too (§6.1).
            let length = payload.data.readableBytes + (payload.paddingBytes.map { $0 + 1 } ?? 0)
            // The answer is taken before any window is opened: a frame written now makes
            // NIOHTTP2Handler deliver the events this frame caused (the stream's closing) at once.
            if exchanges[frame.streamID] != nil {
                if case .byteBuffer(var part) = payload.data, part.readableBytes > 0,
                    let failure = exchanges[frame.streamID]!.assembly.received(&part) {
                    fail(frame.streamID, with: failure)
                } else if payload.endStream {
                    finish(frame.streamID)
                } else {
                    openStreamWindow(frame.streamID, after: length, context: context)
                }
            }
            openConnectionWindow(after: length, context: context)
        case .rstStream(let code):
            guard let exchange = exchanges.removeValue(forKey: frame.streamID) else { return }
            let failure: any Error = code == .refusedStream && !exchange.assembly.hasHead
                // Not processed at all (§8.7): safe to send again.
                ? ConnectionClosedBeforeAnswer(url: exchange.assembly.url)
                : HTTPLoadError.badServerResponse(url: exchange.assembly.url, reason: "the server reset its HTTP/2 stream with \(Self.name(code))")
            exchange.assembly.promise.fail(failure)
        case .goAway(let lastStreamID, _, _):
            // Streams above the last one the server took were never processed (§6.8): they may be
            // tried again on another connection.
            acceptsStreams.store(false, ordering: .relaxed)
            for streamID in exchanges.keys where streamID > lastStreamID {
                let exchange = exchanges.removeValue(forKey: streamID)!
                exchange.assembly.promise.fail(ConnectionClosedBeforeAnswer(url: exchange.assembly.url))
            }
        default:
            return
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stream closed before its answer ended and without the server's reset (handled as a
        // frame): NIOHTTP2Handler reset it after a frame that broke the protocol on it (a body
        // longer than its content-length, a malformed field), or closed it with the connection.
        if let closed = event as? StreamClosedEvent, let exchange = exchanges.removeValue(forKey: closed.streamID) {
            let reason = closed.reason.map { "its HTTP/2 stream was reset with \(Self.name($0)) (the server's frames broke the protocol on it)" }
            exchange.assembly.promise.fail(HTTPLoadError.badServerResponse(url: exchange.assembly.url, reason: reason ?? "its HTTP/2 stream closed before the answer ended"))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        acceptsStreams.store(false, ordering: .relaxed)
        let cause = lastError.map { " (\($0))" } ?? ""
        failAll { exchange -> any Error in
            exchange.assembly.hasHead
                ? HTTPLoadError.badServerResponse(url: exchange.assembly.url, reason: "the connection closed in the middle of the answer\(cause)")
                : ConnectionClosedBeforeAnswer(url: exchange.assembly.url)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Errors of one stream fail that stream; NIOHTTP2Handler has reset it and goes on.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            fail(streamError.streamID, with: HTTPLoadError.badServerResponse(url: exchanges[streamError.streamID]?.assembly.url ?? "", reason: "\(streamError.baseError)"))
            return
        }
        // Anything else: an error on one stream (NIOHTTP2Handler has reset it, and its stream
        // closed event fails its load), or one of the connection, which NIOHTTP2Handler or TLS
        // ends with the connection (its loads fail as it goes inactive, naming this error).
        lastError = error
        context.fireErrorCaught(error)
    }

    // MARK: Exchanges ending

    private func finish(_ streamID: HTTP2StreamID) {
        guard let exchange = exchanges.removeValue(forKey: streamID) else { return }
        exchange.assembly.finish()
        // The whole answer came while the request was still being sent (§8.1 allows it): the
        // rest of the request is not wanted.
        if !exchange.requestEnded { writeReset(streamID) }
    }

    private func fail(_ streamID: HTTP2StreamID, with error: any Error) {
        guard let exchange = exchanges.removeValue(forKey: streamID) else { return }
        exchange.assembly.promise.fail(error)
        writeReset(streamID)
    }

    /// The load failed from outside (timed out, cancelled): its stream is reset if still open.
    private func reset(_ streamID: HTTP2StreamID) {
        guard exchanges.removeValue(forKey: streamID) != nil else { return }
        writeReset(streamID)
    }

    private func writeReset(_ streamID: HTTP2StreamID) {
        guard let context, context.channel.isActive else { return }
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
    }

    private func failAll(_ error: (Exchange) -> any Error) {
        let ending = exchanges
        exchanges = [:]
        for exchange in ending.values { exchange.assembly.promise.fail(error(exchange)) }
    }

    // MARK: Flow control

    private func openConnectionWindow(after length: Int, context: ChannelHandlerContext) {
        connectionUnacknowledged += length
        guard connectionUnacknowledged >= Self.connectionWindow / 2 else { return }
        let increment = connectionUnacknowledged
        connectionUnacknowledged = 0
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
    }

    private func openStreamWindow(_ streamID: HTTP2StreamID, after length: Int, context: ChannelHandlerContext) {
        guard let read = exchanges[streamID].map({ $0.unacknowledged + length }) else { return }
        let increment = read >= Self.streamWindow / 2 ? read : 0
        exchanges[streamID]!.unacknowledged = read - increment
        guard increment > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
    }

    /// An error code's name (RFC 9113 §7), for messages: "INTERNAL_ERROR (0x2)".
    static func name(_ code: HTTP2ErrorCode) -> String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR",
            "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        let number = Int(code.networkCode)
        let hex = "0x" + String(number, radix: 16)
        return number < names.count ? "\(names[number]) (\(hex))" : "error code \(hex)"
    }

    /// An answer's head from its HTTP/2 fields: `:status` (§8.3.2) and the regular fields.
    static func responseHead(_ fields: HPACKHeaders) -> HTTPResponseHead? {
        guard let status = fields.first(name: ":status"), status.utf8.count == 3, let code = Int(status) else { return nil }
        var headers = HTTPHeaders()
        headers.reserveCapacity(fields.count)
        for (name, value, _) in fields where !name.hasPrefix(":") { headers.add(name: name, value: value) }
        return HTTPResponseHead(version: .http2, status: HTTPResponseStatus(statusCode: code), headers: headers)
    }
}
