import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Sits in each HTTP/1.1 connection's and each HTTP/2 stream's pipeline, after the HTTP codec,
/// and keeps the connection's `HTTPConnectionLimiter` told: a request read whole and not yet
/// answered holds the request deadline off; its answer (or an answer given before the request
/// was read whole: a refusal, a built-in endpoint) starts the next one's deadline.
///
/// It also carries out `Connection: close` on an answer: on HTTP/1.1 the connection is closed
/// once the answer is written; HTTP/2 has no Connection field (RFC 9113 §8.2.2), so the field is
/// removed and only the stream is closed (reset if its request was not read whole), while the
/// connection's other streams go on.
final class HTTPExchangeTracker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var limiter: HTTPConnectionLimiter?
    /// Whether this handler is on an HTTP/2 stream (a child of the connection's channel).
    private var onStream = false
    /// The current request's answer has been written.
    private var answered = false
    /// The current request was read whole before its answer, and counted as in progress.
    private var inProgress = false
    /// The answer being written asked for the connection (or stream) to close.
    private var closeAfterAnswer = false

    func handlerAdded(context: ChannelHandlerContext) {
        // The limiter is in the connection's pipeline: this one's (HTTP/1.1) or, for an HTTP/2
        // stream, its parent's, which shares this event loop and can be read synchronously.
        onStream = context.channel.isHTTP2Stream
        let connection = onStream ? context.channel.parent ?? context.channel : context.channel
        limiter = try? connection.pipeline.syncOperations.handler(type: HTTPConnectionLimiter.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        settle()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A stream reset (or a connection lost) before its answer was written.
        settle()
        context.fireChannelInactive()
    }

    private func settle() {
        if inProgress { limiter?.requestEnded() }
        inProgress = false
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            answered = false
            closeAfterAnswer = false
        case .end:
            if !answered, !inProgress {
                inProgress = true
                limiter?.requestBegan()
            }
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.headerFields[.connection]?.lowercased() == "close":
            closeAfterAnswer = true
            guard onStream else { break }
            head.headerFields[.connection] = nil
            context.write(wrapOutboundOut(.head(head)), promise: promise)
            return
        case .end:
            answered = true
            if inProgress {
                inProgress = false
                limiter?.requestEnded()
            } else {
                limiter?.rearmIfIdle()
            }
            guard closeAfterAnswer else { break }
            let channel = context.channel
            let written = context.writeAndFlush(data)
            written.cascade(to: promise)
            written.whenComplete { _ in channel.close(promise: nil) }
            return
        default:
            break
        }
        context.write(data, promise: promise)
    }
}

extension Channel {
    /// Whether this is a stream of an HTTP/2 connection: a child of the connection's channel,
    /// itself a child of the listening socket (an HTTP/1.1 connection's parent is the listener).
    var isHTTP2Stream: Bool { parent?.parent != nil }
}
