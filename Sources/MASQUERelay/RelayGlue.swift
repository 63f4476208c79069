import NIOCore

/// Two channels on one event loop joined byte for byte: what one reads, the other writes. One
/// handler sits in each channel's pipeline, holding the other; a channel reads only while its
/// partner can take more (so neither side buffers without bound), and either's end closes both.
/// For an HTTP/1.1 CONNECT tunnel: the client's connection (after TLS) and the target's.
final class RelayGlue: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var partner: RelayGlue?
    private var context: ChannelHandlerContext?
    private var readPending = false

    private init() {}

    /// Two handlers, each the other's partner.
    static func pair() -> (RelayGlue, RelayGlue) {
        let first = RelayGlue(), second = RelayGlue()
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

    func channelInactive(context: ChannelHandlerContext) {
        partner?.close()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        partner?.close()
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

    private func close() {
        // What is written goes out before the close.
        guard let context else { return }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in channel.close(promise: nil) }
    }

    private func readIfPending() {
        guard readPending, let context else { return }
        readPending = false
        context.read()
    }
}
