import NIOCore
import NIOHTTP2

/// At the end of an HTTP/2 relay connection's pipeline: closes the connection once it has had no
/// open stream (no flow, no tunnel) for `idleSeconds`, so a client that connects, finishes TLS
/// and then opens nothing — or whose flows have all ended — does not hold a connection slot
/// forever. The connection says GOAWAY first (RFC 9113 §6.8, NO_ERROR: nothing was refused),
/// so a client knows to open a new one for its next flow. A connection with a quiet tunnel is
/// not idle: only the number of open streams counts, told by the stream initializer (each
/// stream channel's opening and close; swift-nio-http2's inline multiplexer passes no stream
/// events down the connection's pipeline).
final class RelayIdleConnectionCloser: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: touched on its channel's event loop only.
    typealias InboundIn = NIOAny

    private let idleSeconds: Double
    private let counters: RelayCounters
    private var openStreams = 0
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(idleSeconds: Double, counters: RelayCounters) {
        self.idleSeconds = idleSeconds
        self.counters = counters
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive, openStreams == 0 { arm(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        timer?.cancel()
        timer = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        if openStreams == 0 { arm(context) }
        context.fireChannelActive()
    }

    /// A stream channel of the connection was opened; `stream`'s close is watched. On the
    /// connection's event loop (a stream channel's is its parent's).
    func opened(_ stream: any Channel) {
        openStreams += 1
        timer?.cancel()
        timer = nil
        stream.closeFuture.whenComplete { [self] _ in
            openStreams -= 1
            if openStreams == 0, let context { arm(context) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        let counters = counters
        let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
        timer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(idleSeconds * 1000))) { [weak self] in
            guard let self, self.openStreams == 0 else { return }
            counters.count(\.idleConnectionsClosed)
            channel.writeAndFlush(goAway).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
