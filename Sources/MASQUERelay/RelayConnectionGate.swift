import HTTPServing
import NetExtCore
import NIOCore
import NIOTLS

/// Right after TLS in every relay connection's pipeline: counts the connection against the
/// relay's caps (`RelayLimits`: all connections, and those of its source), closing it at once
/// when over one, and closes it when its TLS handshake has not finished within the deadline (a
/// client that connects and sends nothing holds no slot for long).
final class RelayConnectionGate: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny

    private let usage: HTTPServerUsage
    private let counters: RelayCounters
    private let deadline: Double
    /// nil until the connection is admitted or refused.
    private var admitted: Bool?
    private var counted: Bool { admitted == true }
    private var source: SourceKey?
    private var handshakeTimer: Scheduled<Void>?

    init(usage: HTTPServerUsage, counters: RelayCounters, handshakeDeadline: Double) {
        self.usage = usage
        self.counters = counters
        self.deadline = handshakeDeadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // Added to a channel that is active already (a child channel's initializer runs after
        // accept): count it now.
        if context.channel.isActive { admit(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context: context)
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            handshakeTimer?.cancel()
            handshakeTimer = nil
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        handshakeTimer?.cancel()
        handshakeTimer = nil
        if counted { usage.closeConnection(from: source) }
        admitted = false
        context.fireChannelInactive()
    }

    private func admit(context: ChannelHandlerContext) {
        guard admitted == nil else { return }
        source = context.channel.remoteAddress.flatMap(HTTPServerUsage.sourceKey)
        guard usage.openConnection(from: source) else {
            admitted = false
            counters.count(\.connectionsRefused)
            context.close(promise: nil)
            return
        }
        admitted = true
        let channel = context.channel
        let counters = counters
        handshakeTimer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(deadline * 1000))) {
            counters.count(\.handshakesTimedOut)
            channel.close(promise: nil)
        }
    }
}
