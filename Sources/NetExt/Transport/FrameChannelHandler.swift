import NetExtIPC
import NIOCore

/// Splits a byte stream into control-protocol frames (4-byte big-endian length + payload).
struct FrameChannelDecoder: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        guard Int(length) <= FrameDecoder.maximumFrameLength else { throw FrameError(announcedLength: Int(length)) }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        let payload = buffer.readBytes(length: Int(length)) ?? []
        context.fireChannelRead(Self.wrapInboundOut(payload))
        return .continue
    }
}

/// Hands decoded frames to an `AsyncStream` and finishes it when the channel closes.
final class FrameStreamHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = [UInt8]

    let continuation: AsyncStream<[UInt8]>.Continuation

    init(continuation: AsyncStream<[UInt8]>.Continuation) {
        self.continuation = continuation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        continuation.yield(Self.unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed frame (or a reset) ends the connection; the stream's end tells the owner.
        continuation.finish()
        context.close(promise: nil)
    }
}
