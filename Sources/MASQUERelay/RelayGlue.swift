import NIOCore

/// Two channels on one event loop joined byte for byte: what one reads, the other writes. One
/// handler sits in each channel's pipeline, holding the other; a channel reads only while its
/// partner can take more (so neither side buffers without bound). One side's half-close (a
/// channel that allows remote half-closure) shuts the other's output; a side that ends, or
/// fails, closes the other — after what was written has gone, and with `beforeOrderlyClose`
/// first when it ended in order. For an HTTP/1.1 CONNECT tunnel at the relay (the client's TLS
/// connection and the target's), and for flows carried direct (`DirectRelayTransport`).
final class RelayGlue: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var partner: RelayGlue?
    private var context: ChannelHandlerContext?
    private var readPending = false
    private var failed = false
    private var inputClosed = false
    private var outputClosed = false
    private let beforeOrderlyClose: (() -> Void)?

    private init(beforeOrderlyClose: (() -> Void)?) {
        self.beforeOrderlyClose = beforeOrderlyClose
    }

    /// Two handlers, each the other's partner; `firstBeforeOrderlyClose` runs before the first's
    /// channel is closed because the second's ended in order.
    static func pair(firstBeforeOrderlyClose: (() -> Void)? = nil) -> (RelayGlue, RelayGlue) {
        let first = RelayGlue(beforeOrderlyClose: firstBeforeOrderlyClose), second = RelayGlue(beforeOrderlyClose: nil)
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.write(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            inputClosed = true
            partner?.shutdownOutput()
            if outputClosed { context.close(promise: nil) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.close(orderly: !failed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failed = true
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // This side drained: the partner may read again.
        if context.channel.isWritable { partner?.readIfPending() }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if partner?.isWritable ?? true {
            context.read()
        } else {
            readPending = true
        }
    }

    private var isWritable: Bool { context?.channel.isWritable ?? false }

    private func write(_ bytes: ByteBuffer) {
        context?.write(wrapOutboundOut(bytes), promise: nil)
    }

    private func flush() {
        context?.flush()
    }

    /// The partner's input ended: no more to write here (what is queued goes first).
    private func shutdownOutput() {
        guard let context, !outputClosed else { return }
        outputClosed = true
        let channel = context.channel
        let alsoInput = inputClosed
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in
            if alsoInput { channel.close(promise: nil) } else { channel.close(mode: .output, promise: nil) }
        }
    }

    /// The partner's channel went: this one follows, after what was written has gone.
    private func close(orderly: Bool) {
        guard let context else { return }
        let channel = context.channel
        let before = orderly ? beforeOrderlyClose : nil
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in
            before?()
            channel.close(promise: nil)
        }
    }

    private func readIfPending() {
        guard readPending, let context else { return }
        readPending = false
        context.read()
    }
}
