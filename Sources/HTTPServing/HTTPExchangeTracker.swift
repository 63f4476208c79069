import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Sits in each HTTP/1.1 connection's pipeline, after the HTTP codec, and keeps the
/// connection's `HTTPConnectionLimiter` told: a request read whole and not yet answered holds
/// the request deadline off; its answer (or an answer given before the request was read whole:
/// a refusal, a built-in endpoint) starts the next one's deadline. It also carries out
/// `Connection: close` on an answer: the connection is closed once the answer is written.
/// (HTTP/2 streams are told apart and tracked by `HTTP2StreamExchange`.)
final class HTTPExchangeTracker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var limiter: HTTPConnectionLimiter?
    /// The current request's answer has been written.
    private var answered = false
    /// The current request was read whole before its answer, and counted as in progress.
    private var inProgress = false
    /// The answer being written asked for the connection (or stream) to close.
    private var closeAfterAnswer = false

    func handlerAdded(context: ChannelHandlerContext) {
        limiter = try? context.channel.pipeline.syncOperations.handler(type: HTTPConnectionLimiter.self)
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
        case .head(let head) where head.headerFields[.connection]?.lowercased() == "close":
            closeAfterAnswer = true
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
