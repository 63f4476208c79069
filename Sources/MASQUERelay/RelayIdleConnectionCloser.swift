import NIOCore
import NIOHTTP2

/// At the end of an HTTP/2 relay connection's pipeline: closes the connection once it has had no
/// open stream (no flow, no tunnel) for `idleSeconds`, so a client that connects, finishes TLS
/// and then opens nothing — or whose flows have all ended — does not hold a connection slot
/// forever. A connection with a quiet tunnel is not idle: only the number of open streams
/// counts, told by the stream initializer (each stream channel's opening and close;
/// swift-nio-http2's inline multiplexer passes no stream events down the connection's pipeline).
///
/// The close is graceful, as RFC 9113 §6.8 describes: GOAWAY with the largest stream identifier
/// and NO_ERROR first — the client opens nothing more here and takes a new connection for its
/// next flow —, then `graceSeconds` for a stream the client opened before the GOAWAY reached it
/// (its HEADERS crossed the GOAWAY on the wire: it is served, not cut), and the connection closes
/// once no stream is open.
final class RelayIdleConnectionCloser: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: touched on its channel's event loop only.
    typealias InboundIn = NIOAny

    private let idleSeconds: Double
    private let graceSeconds: Double
    private let counters: RelayCounters
    private var openStreams = 0
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// The GOAWAY was sent; the connection closes when the grace is over and no stream is open.
    private var draining = false
    private var graceOver = false

    init(idleSeconds: Double, graceSeconds: Double = 1, counters: RelayCounters) {
        self.idleSeconds = idleSeconds
        self.graceSeconds = graceSeconds
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
        if !draining {
            timer?.cancel()
            timer = nil
        }
        stream.closeFuture.whenComplete { [self] _ in
            openStreams -= 1
            guard openStreams == 0, let context else { return }
            if draining {
                if graceOver { context.channel.close(promise: nil) }
            } else {
                arm(context)
            }
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
        let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
        timer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(idleSeconds * 1000))) { [weak self] in
            guard let self, self.openStreams == 0, !self.draining else { return }
            self.counters.count(\.idleConnectionsClosed)
            self.draining = true
            channel.writeAndFlush(goAway, promise: nil)
            self.timer = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(self.graceSeconds * 1000))) { [weak self] in
                guard let self else { return }
                self.graceOver = true
                if self.openStreams == 0 { channel.close(promise: nil) }
            }
        }
    }
}
