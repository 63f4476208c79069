import NIOCore
import NIOHPACK
import NIOHTTP2

/// One DoH exchange on its own HTTP/2 stream: sends the POST (RFC 8484 §4.1) — or an Oblivious
/// DoH message, or a GET of a target's configurations — reads the status, the media type and
/// the body (§4.2.1), and completes `answer` with the body or the reason.
final class DoHStreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    struct Request {
        var method: String
        var authority: String
        /// The path with its query, if any.
        var path: String
        /// Empty for a GET.
        var body: [UInt8]
        /// The media type of the body and of the answer (`application/dns-message` for DoH).
        var mediaType: String
        var server: String
    }

    static let mediaType = "application/dns-message"
    private let request: Request
    private let answer: EventLoopPromise<[UInt8]>
    private var status: Int?
    private var body: ByteBuffer?
    private var done = false

    init(request: Request, answer: EventLoopPromise<[UInt8]>) {
        self.request = request
        self.answer = answer
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers: HPACKHeaders = [
            ":method": request.method, ":scheme": "https", ":authority": request.authority, ":path": request.path, "accept": request.mediaType,
        ]
        guard !request.body.isEmpty else {
            context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
            return context.fireChannelActive()
        }
        headers.add(name: "content-type", value: request.mediaType)
        headers.add(name: "content-length", value: "\(request.body.count)")
        context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: request.body.count)
        buffer.writeBytes(request.body)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if status == nil {
                guard let code = frame.headers.first(name: ":status").flatMap(Int.init) else {
                    return finish(context, .failure(.httpFailure(server: request.server, reason: "the response has no status")))
                }
                // 1xx are interim answers; the final one follows.
                if (100..<200).contains(code) { return }
                guard (200..<300).contains(code) else {
                    return finish(context, .failure(.httpStatus(server: request.server, status: code)))
                }
                let type = frame.headers.first(name: "content-type")?.lowercased() ?? ""
                guard type.split(separator: ";").first.map({ $0.trimmingCharacters(in: .whitespaces) }) == request.mediaType else {
                    return finish(context, .failure(.httpFailure(server: request.server, reason: "content type '\(type)', not \(request.mediaType)")))
                }
                status = code
            }
            if frame.endStream { complete(context) }
        case .data(let frame):
            guard status != nil, case .byteBuffer(var bytes) = frame.data else { return }
            if body == nil { body = context.channel.allocator.buffer(capacity: bytes.readableBytes) }
            guard (body?.readableBytes ?? 0) + bytes.readableBytes <= DNSOverHTTPSUpstream.maximumAnswerBytes else {
                return finish(context, .failure(.httpFailure(server: request.server, reason: "the answer is longer than 65535 bytes")))
            }
            body?.writeBuffer(&bytes)
            if frame.endStream { complete(context) }
        case .rstStream(let code):
            finish(context, .failure(.streamReset(server: request.server, code: "\(code)")))
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(context, .failure(.connectionClosed(server: request.server)))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let closed = error as? NIOHTTP2Errors.StreamClosed {
            finish(context, .failure(.streamReset(server: request.server, code: "\(closed.errorCode)")))
            return
        }
        finish(context, .failure(.connectFailed(server: request.server, reason: FailureText.reason(error))))
    }

    private func complete(_ context: ChannelHandlerContext) {
        guard let body, body.readableBytes > 0 else {
            return finish(context, .failure(.httpFailure(server: request.server, reason: "the response has no body")))
        }
        finish(context, .success(Array(body.readableBytesView)))
    }

    /// An answer leaves the stream to close by itself (both sides have ended it); a failure
    /// cancels it (RST_STREAM) unless it is closed already.
    private func finish(_ context: ChannelHandlerContext, _ result: Result<[UInt8], EncryptedDNSError>) {
        guard !done else { return }
        done = true
        answer.completeWith(result.mapError { $0 as any Error })
        if case .failure = result { context.close(promise: nil) }
    }
}
