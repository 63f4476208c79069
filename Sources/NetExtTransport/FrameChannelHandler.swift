import NetExtIPC
import NIOCore
import Synchronization

/// The largest frame a connection accepts now; netextd raises it once a client has said hello
/// (a stranger's first frame is small), so that partial frames cannot hold much memory.
public final class FrameLimit: Sendable {
    private let bytes: Atomic<Int>

    public init(_ bytes: Int) {
        self.bytes = Atomic(bytes)
    }

    public var current: Int { bytes.load(ordering: .relaxed) }

    public func set(_ value: Int) { bytes.store(value, ordering: .relaxed) }
}

/// Splits a byte stream into control-protocol frames (4-byte big-endian length + payload).
struct FrameChannelDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    let limit: FrameLimit

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        guard Int(length) <= limit.current else { throw FrameError(announcedLength: Int(length), limit: limit.current) }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        // A slice shares the received bytes: the frame is not copied.
        guard let payload = buffer.readSlice(length: Int(length)) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(payload))
        return .continue
    }
}

/// Hands decoded frames to an `AsyncStream` and finishes it when the channel closes.
final class FrameStreamHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    let continuation: AsyncStream<ByteBuffer>.Continuation

    init(continuation: AsyncStream<ByteBuffer>.Continuation) {
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
