import HummingbirdCore
import Logging
import NetExtCore
import NIOCore

/// The first handler of every connection: counts it against the server's caps (closing it at
/// once when over one) and closes it when a whole request has not arrived within the deadline —
/// from accept, so a TLS handshake that never finishes is held to it too, and again after each
/// response. There is no deadline while a request is being answered: on HTTP/2, while any of
/// the connection's streams is (`requestBegan`/`requestEnded`, called by each request's
/// `HTTPExchangeTracker` on the connection's event loop).
final class HTTPConnectionLimiter: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    let usage: HTTPServerUsage
    private var counted = false
    /// Whom the connection is counted against (per-source cap).
    private var source: SourceKey?
    private var channel: (any Channel)?
    private var deadline: Scheduled<Void>?
    /// Requests read whole and not yet answered (HTTP/1.1: 0 or 1; HTTP/2: up to the streams cap).
    private var requestsInProgress = 0

    init(usage: HTTPServerUsage) {
        self.usage = usage
    }

    func channelActive(context: ChannelHandlerContext) {
        let source = context.channel.remoteAddress.flatMap(Self.sourceKey)
        guard usage.openConnection(from: source) else {
            context.close(promise: nil)
            return
        }
        counted = true
        self.source = source
        channel = context.channel
        arm()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        if counted { usage.closeConnection(from: source) }
        counted = false
        channel = nil
        context.fireChannelInactive()
    }

    /// The next request must have arrived whole within the deadline (on the channel's loop).
    func arm() {
        deadline?.cancel()
        guard let channel else { return }
        deadline = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(usage.limits.requestDeadline * 1000))) {
            channel.close(promise: nil)
        }
    }

    /// No deadline (on the channel's loop).
    func disarm() {
        deadline?.cancel()
        deadline = nil
    }

    /// A whole request is in: no deadline while it is answered (on the channel's loop).
    func requestBegan() {
        requestsInProgress += 1
        disarm()
    }

    /// A request was answered: the next one's deadline starts once none is left in progress.
    func requestEnded() {
        requestsInProgress = max(0, requestsInProgress - 1)
        rearmIfIdle()
    }

    /// Restarts the deadline unless a request is being answered.
    func rearmIfIdle() {
        if requestsInProgress == 0 { arm() }
    }

    static func sourceKey(of address: SocketAddress) -> SourceKey? { HTTPServerUsage.sourceKey(of: address) }
}

/// A Hummingbird child channel with an `HTTPConnectionLimiter` put first in every connection's
/// pipeline, ahead of TLS and HTTP.
struct LimitedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let usage: HTTPServerUsage

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(HTTPConnectionLimiter(usage: usage))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
