import Dispatch
import HTTPFetching
import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 stream's request and answer (RFC 9113 §8.1), in the stream's channel: the head
/// is checked as soon as its HEADERS frame arrives (`HTTPExchange.answerOnHead`), DATA frames
/// are collected within the responder's limit and the server's budget, and once the request is
/// whole the responder is asked on the task pool and its answer written back from the event
/// loop as HEADERS and DATA frames. One hop each way, no task or async sequence a stream: this
/// is what keeps HTTPS/2 within a few per cent of plain HTTP/1.1 (`scripts/bench-urlfilter`).
///
/// The connection's `HTTPConnectionLimiter` (the parent channel's, same event loop) is told
/// when a request is whole and when it is answered, as `HTTPExchangeTracker` does for
/// HTTP/1.1. After an answer given before the request was read whole, the rest of the body is
/// read and dropped, up to 64 KiB; past that, and at once after a 413 or 503, RST_STREAM with
/// NO_ERROR tells the client to stop sending (RFC 9113 §8.1). (Some clients take that reset as
/// a failure even after a whole answer: AsyncHTTPClient lost Privacy Pass challenges so.)
final class HTTP2StreamExchange: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private enum Phase {
        /// No HEADERS yet.
        case awaitingHead
        /// The head was admitted; DATA frames are collected.
        case readingBody
        /// The request is whole (or was refused) and its answer is being made or written.
        case answering
        /// The answer was given before the request was whole; the rest of its body is read
        /// and dropped (up to `discardLimit` bytes, then the stream is reset).
        case discarding
        /// The answer is written, or the stream was reset.
        case finished
    }

    private let exchange: HTTPExchange
    private var phase = Phase.awaitingHead
    private var limiter: HTTPConnectionLimiter?
    private var started: UInt64 = 0
    private var method = ""
    private var path = "/"
    private var query: String?
    private var endpoint = ""
    private var headers: [(name: String, value: String)] = []
    private var limit = 0
    private var body: [UInt8] = []
    /// Bytes of the server's body budget held for `body`.
    private var reserved = 0
    /// The request was read whole and counted as in progress by the limiter.
    private var inProgress = false
    /// Bytes of body dropped after an early answer.
    private var discarded = 0
    /// At most this much body is read and dropped after an early answer before the stream is reset.
    static let discardLimit = 64 * 1024

    /// What follows an answer on the stream.
    private enum AfterAnswer {
        /// Nothing: the request was whole.
        case nothing
        /// The rest of the request's body is read and dropped (`discardLimit`).
        case discardRest
        /// RST_STREAM with NO_ERROR: the client is to stop sending.
        case reset
    }

    init(exchange: HTTPExchange) {
        self.exchange = exchange
    }

    func handlerAdded(context: ChannelHandlerContext) {
        limiter = try? context.channel.parent?.pipeline.syncOperations.handler(type: HTTPConnectionLimiter.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        settle()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Reset by the client, or the connection lost, before the answer was written.
        settle()
        phase = .finished
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            switch phase {
            case .awaitingHead: readHead(frame.headers, endStream: frame.endStream, context: context)
            case .readingBody where frame.endStream: requestIsWhole(context: context)  // trailers, not used
            default: break
            }
        case .data(let frame):
            if phase == .discarding { return drop(frame, context: context) }
            guard phase == .readingBody else { return }
            if case .byteBuffer(let buffer) = frame.data, !take(buffer, context: context) { return }
            if frame.endStream { requestIsWhole(context: context) }
        default:
            break
        }
    }

    private func readHead(_ fields: HPACKHeaders, endStream: Bool, context: ChannelHandlerContext) {
        started = DispatchTime.now().uptimeNanoseconds
        method = fields.first(name: ":method") ?? "GET"
        (path, query) = HTTPExchange.split(fields.first(name: ":path") ?? "/")
        endpoint = exchange.endpointLabel(path)
        headers = fields.compactMap { field in field.name.hasPrefix(":") ? nil : (name: field.name, value: field.value) }
        // The authority as a handler of HTTP/1.1 sees it: a Host field made from `:authority`
        // when the request carries none (RFC 9113 §8.3.1).
        if let authority = fields.first(name: ":authority"), !headers.contains(where: { $0.name.equalsIgnoringASCIICase("host") }) {
            headers.insert((name: "host", value: authority), at: 0)
        }
        let contentType = fields.first(name: "content-type")
        if let (early, _) = exchange.answerOnHead(method: method, path: path, contentType: contentType, headers: headers) {
            phase = .answering
            return write(early, then: endStream ? .nothing : .discardRest, context: context)
        }
        limit = exchange.responder.bodyLimit(method: method, path: path)
        phase = .readingBody
        if endStream { requestIsWhole(context: context) }
    }

    /// Adds a DATA frame's bytes to the body; false (and the stream answered) when over a limit.
    private func take(_ buffer: ByteBuffer, context: ChannelHandlerContext) -> Bool {
        let count = buffer.readableBytes
        if body.count + count > limit {
            phase = .answering
            write(HTTPExchange.bodyTooLarge(atLeast: body.count + count, limit: limit), then: .reset, context: context)
            return false
        }
        guard exchange.usage.reserve(count) else {
            phase = .answering
            write(HTTPExchange.bodyBudgetSpent, then: .reset, context: context)
            return false
        }
        reserved += count
        if body.isEmpty { body.reserveCapacity(count) }
        body.append(contentsOf: buffer.readableBytesView)
        return true
    }

    private func requestIsWhole(context: ChannelHandlerContext) {
        phase = .answering
        inProgress = true
        limiter?.requestBegan()
        let request = HTTPServerRequest(method: method, path: path, query: query, headers: headers, body: body, majorVersion: 2)
        body = []
        let responder = exchange.responder
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.makeFutureWithTask {
            await responder.respond(to: request)
        }.whenSuccess { response in
            let (handler, context) = loopBound.value
            handler.releaseBody()
            guard handler.phase == .answering else { return }  // reset meanwhile
            handler.write(response, then: .nothing, context: context)
        }
    }

    /// Writes `response` as HEADERS (and DATA) frames ending the stream, then does `then`.
    private func write(_ response: HTTPServerResponse, then: AfterAnswer, context: ChannelHandlerContext) {
        exchange.record(method: method, endpoint: endpoint, started: started, status: response.status)
        var fields = HPACKHeaders()
        fields.reserveCapacity(response.headers.count + 2)
        fields.add(name: ":status", value: String(response.status))
        for (name, value) in response.headers {
            let lowered = name.lowercased()
            // Connection-specific fields are not sent on HTTP/2 (RFC 9113 §8.2.2).
            guard !Self.connectionSpecific.contains(lowered), lowered != "content-length" else { continue }
            fields.add(name: lowered, value: value)
        }
        fields.add(name: "content-length", value: String(response.body.count))
        let headOnly = response.body.isEmpty || method == "HEAD"
        context.write(wrapOutboundOut(.headers(.init(headers: fields, endStream: headOnly))), promise: nil)
        if !headOnly {
            let data = context.channel.allocator.buffer(bytes: response.body)
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(data), endStream: true))), promise: nil)
        }
        context.flush()
        releaseBody()
        if inProgress {
            inProgress = false
            limiter?.requestEnded()
        } else {
            limiter?.rearmIfIdle()
        }
        switch then {
        case .nothing:
            phase = .finished
        case .discardRest:
            phase = .discarding
        case .reset:
            phase = .finished
            reset(context: context)
        }
    }

    /// Drops a DATA frame that came after an early answer; resets the stream past `discardLimit`.
    private func drop(_ frame: HTTP2Frame.FramePayload.Data, context: ChannelHandlerContext) {
        discarded += frame.data.readableBytes
        if frame.endStream {
            phase = .finished
        } else if discarded > Self.discardLimit {
            phase = .finished
            reset(context: context)
        }
    }

    /// "A server can send a complete response prior to the client sending an entire request …
    /// [and] request that the client abort transmission of a request without error by sending
    /// a RST_STREAM with an error code of NO_ERROR" (RFC 9113 §8.1).
    private func reset(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(.rstStream(.noError)), promise: nil)
    }

    private func releaseBody() {
        exchange.usage.release(reserved)
        reserved = 0
        body = []
    }

    private func settle() {
        releaseBody()
        if inProgress { limiter?.requestEnded() }
        inProgress = false
    }

    /// Fields that belong to one connection and are never sent on HTTP/2 (RFC 9113 §8.2.2).
    static let connectionSpecific: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]
}
