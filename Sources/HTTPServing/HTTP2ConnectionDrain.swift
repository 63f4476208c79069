import NIOCore
import NIOHTTP2

/// Sits after the HTTP/2 handler of each connection and carries out a graceful shutdown
/// (Hummingbird's server sends `ChannelShouldQuiesceEvent` to every connection): GOAWAY with
/// NO_ERROR naming the last stream the server has seen (RFC 9113 §6.8), so the client opens no
/// more on this connection and knows which were not processed; the streams already open are
/// answered, and the connection closes once none is left. It counts the streams open through
/// the HTTP/2 handler's stream delegate (``delegate``; with the inline multiplexer the
/// handler's stream events do not travel down the pipeline).
final class HTTP2ConnectionDrain: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var openStreams = 0
    private var lastStream = HTTP2StreamID.rootStream
    private var draining = false
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// What the HTTP/2 handler tells of its streams (on the connection's event loop).
    func delegate(on eventLoop: any EventLoop) -> some NIOHTTP2StreamDelegate {
        StreamCounter(drain: NIOLoopBound(self, eventLoop: eventLoop))
    }

    private struct StreamCounter: NIOHTTP2StreamDelegate {
        let drain: NIOLoopBound<HTTP2ConnectionDrain>
        func streamCreated(_ id: HTTP2StreamID, channel: any Channel) { drain.value.streamOpened(id) }
        func streamClosed(_ id: HTTP2StreamID, channel: any Channel) { drain.value.streamEnded() }
    }

    private func streamOpened(_ id: HTTP2StreamID) {
        openStreams += 1
        lastStream = max(lastStream, id)
    }

    private func streamEnded() {
        openStreams = max(0, openStreams - 1)
        guard draining, openStreams == 0, let context else { return }
        // The stream ends as its last frame is written, before that frame is flushed: the
        // close comes after the flush (on the next turn of the loop, outside the handler's write).
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            loopBound.value.flush()
            loopBound.value.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        guard !draining else { return }
        draining = true
        let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStream, errorCode: .noError, opaqueData: nil))
        let sent = context.writeAndFlush(wrapOutboundOut(goAway))
        if openStreams == 0 {
            let channel = context.channel
            sent.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
