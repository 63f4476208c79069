import NIOCore
import NIOHTTP2

/// Every DoH exchange of one HTTP/2 connection, on its frames: each request is a stream of its
/// own (HEADERS, then DATA with END_STREAM; RFC 9113 §8.1), answered by the frames of that stream
/// ID, without the channel, pipeline and handler swift-nio-http2's multiplexer makes per stream.
/// Lives after `NIOHTTP2Handler` (frame mode) on the connection's channel and is used on its event
/// loop only.
///
/// - Stream IDs are odd and rise (§5.1.1); near the end of their space the connection takes no
///   more requests (the owner opens another), as after the server's GOAWAY (§6.8), whose streams
///   past its last ID fail as "connection closed" (worth sending again).
/// - A request that fails or times out before its stream ended is cancelled (RST_STREAM CANCEL,
///   §8.7); an answered stream is ended by both sides and left alone (resetting every answered
///   stream is what servers take for a rapid-reset attack).
/// - Requests are written at once and flushed together on the loop's next turn.
/// - The connection's receive window (§6.9) is given back as answers are read: a WINDOW_UPDATE on
///   stream 0 after each read that consumed data. Streams' own windows need none: one answer
///   (at most 65,535 bytes) fits the default.
final class DoHConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// Gets a request's body, or the reason it has none; called once.
    typealias Completion = (Result<[UInt8], EncryptedDNSError>) -> Void

    /// A class: its answer is read frame by frame in place, not copied out of the table and
    /// back for each frame.
    private final class Exchange {
        var response: DoHResponse
        let completion: Completion

        init(response: DoHResponse, completion: @escaping Completion) {
            self.response = response
            self.completion = completion
        }
    }

    private var exchanges: [HTTP2StreamID: Exchange] = [:]
    private var nextStreamID: Int32 = 1
    private var context: ChannelHandlerContext?
    private var consumedBytes = 0
    /// False once the connection takes no new request (GOAWAY, stream IDs spent, closed).
    private var isUsable = true
    /// A flush is queued on the event loop: requests written until it runs leave together.
    private var flushPending = false
    /// Told once when the connection stops taking new requests.
    private let retired: () -> Void

    init(retired: @escaping () -> Void) { self.retired = retired }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        retire()
        failAll { .connectionClosed(server: $0.request.server) }
    }

    /// Sends `request` on a new stream, whose ID it returns (for ``cancel(_:)``); `completion`
    /// gets its body or the reason, unless it is cancelled first. nil: the connection takes no
    /// request (`completion` has been told).
    func start(_ request: DoHRequest, completion: @escaping Completion) -> HTTP2StreamID? {
        guard let context, isUsable else {
            completion(.failure(.connectionClosed(server: request.server)))
            return nil
        }
        let id = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        if nextStreamID > Int32.max - 2 { retire() }
        exchanges[id] = Exchange(response: DoHResponse(request: request), completion: completion)
        let headers = HTTP2Frame.FramePayload.Headers(headers: request.headers, endStream: request.body.isEmpty)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(headers))), promise: nil)
        if !request.body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: request.body.count)
            buffer.writeBytes(request.body)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))), promise: nil)
        }
        flushSoon(context)
        return id
    }

    /// Flushes once the event loop has run the tasks queued before: under load many requests
    /// leave in one TLS record and one system call, not one each.
    private func flushSoon(_ context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        context.eventLoop.execute { [self] in
            flushPending = false
            self.context?.flush()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if frame.streamID == .rootStream {
            if case .goAway(let lastStreamID, _, _) = frame.payload {
                retire()
                for id in exchanges.keys where id > lastStreamID {
                    finish(id, .failure(.connectionClosed(server: exchanges[id]?.response.request.server ?? "?")), reset: false)
                }
            }
            return
        }
        guard let exchange = exchanges[frame.streamID] else { return }  // a cancelled stream's late frames
        let outcome: Result<[UInt8], EncryptedDNSError>?
        var ended = false
        switch frame.payload {
        case .headers(let headers):
            ended = headers.endStream
            outcome = exchange.response.headers(headers.headers, endStream: headers.endStream)
        case .data(let data):
            consumedBytes += data.data.readableBytes + (data.paddingBytes ?? 0)
            ended = data.endStream
            guard case .byteBuffer(let bytes) = data.data else { return }
            outcome = exchange.response.data(bytes, endStream: data.endStream)
        case .rstStream(let code):
            ended = true
            outcome = .failure(.streamReset(server: exchange.response.request.server, code: "\(code)"))
        default:
            outcome = nil
        }
        guard let outcome else { return }
        finish(frame.streamID, outcome, reset: !ended)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if consumedBytes > 0 {
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: consumedBytes))), promise: nil)
            consumedBytes = 0
        }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        retire()
        failAll { .connectionClosed(server: $0.request.server) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let closed = error as? NIOHTTP2Errors.StreamClosed {
            if let exchange = exchanges[closed.streamID] {
                finish(closed.streamID, .failure(.streamReset(server: exchange.response.request.server, code: "\(closed.errorCode)")), reset: false)
            }
            return
        }
        // A connection error: NIOHTTP2Handler closes the connection, which fails what is left.
        context.fireErrorCaught(error)
    }

    /// Completes an exchange; a failure before the stream ended cancels the stream.
    private func finish(_ id: HTTP2StreamID, _ outcome: Result<[UInt8], EncryptedDNSError>, reset: Bool) {
        guard let exchange = exchanges.removeValue(forKey: id) else { return }
        if case .failure = outcome, reset { sendReset(id) }
        exchange.completion(outcome)
    }

    /// An exchange given up from outside (its deadline): its stream is cancelled if still open,
    /// and its completion is not called.
    func cancel(_ id: HTTP2StreamID) {
        guard exchanges.removeValue(forKey: id) != nil else { return }
        sendReset(id)
    }

    private func sendReset(_ id: HTTP2StreamID) {
        context?.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
    }

    private func failAll(_ reason: (DoHResponse) -> EncryptedDNSError) {
        let all = exchanges
        exchanges = [:]
        for exchange in all.values { exchange.completion(.failure(reason(exchange.response))) }
    }

    private func retire() {
        guard isUsable else { return }
        isUsable = false
        retired()
    }
}
