import NetExtCore
import NetExtIPC
import NIOCore
import NIOPosix

/// A connection that carries control-protocol frames: over a Unix socket to netextd, or over
/// the socketpair a provider inherits. Inbound frames arrive on `frames`; the stream ends when
/// the peer goes away.
public final class FramedConnection: Sendable {
    public let channel: any Channel
    /// Each frame's payload (without the length), as it arrived.
    public let frames: AsyncStream<ByteBuffer>
    /// The largest frame accepted from the peer now; a longer one ends the connection.
    public let frameLimit: FrameLimit

    private init(channel: any Channel, frames: AsyncStream<ByteBuffer>, frameLimit: FrameLimit) {
        self.channel = channel
        self.frames = frames
        self.frameLimit = frameLimit
    }

    /// Installs the frame handlers on a fresh channel and returns the connection.
    public static func attach(to channel: any Channel, maximumFrameLength: Int = FrameDecoder.maximumFrameLength) throws -> FramedConnection {
        let (stream, continuation) = AsyncStream<ByteBuffer>.makeStream()
        let limit = FrameLimit(maximumFrameLength)
        try installHandlers(on: channel, limit: limit, continuation: continuation)
        return FramedConnection(channel: channel, frames: stream, frameLimit: limit)
    }

    /// The frame decoder and the handler that feeds `frames`, at the end of the pipeline.
    private static func installHandlers(on channel: any Channel, limit: FrameLimit, continuation: AsyncStream<ByteBuffer>.Continuation) throws {
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameChannelDecoder(limit: limit)))
        try channel.pipeline.syncOperations.addHandler(FrameStreamHandler(continuation: continuation))
    }

    /// Stops reading from the socket (backpressure: the peer's further frames wait in its own
    /// send buffer, not in this process).
    public func pauseReading() {
        channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
    }

    /// Reads from the socket again.
    public func resumeReading() {
        channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
    }

    /// Connects to a Unix socket.
    public static func connect(unixSocketPath path: String) async throws -> FramedConnection {
        try await open { bootstrap in bootstrap.connect(unixDomainSocketPath: path) }
    }

    /// Adopts an already connected socket (for example descriptor 3 of a provider).
    public static func adopt(descriptor: Int32) async throws -> FramedConnection {
        try await open { bootstrap in bootstrap.withConnectedSocket(descriptor) }
    }

    /// The frame handlers go in before the channel becomes active and reads start: a peer that
    /// speaks first (a provider's hello arrives as soon as it runs) must find the decoder in
    /// place, or its first bytes pass through a bare pipeline and are lost.
    private static func open(_ make: (ClientBootstrap) -> EventLoopFuture<any Channel>) async throws -> FramedConnection {
        let (stream, continuation) = AsyncStream<ByteBuffer>.makeStream()
        let limit = FrameLimit(FrameDecoder.maximumFrameLength)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try installHandlers(on: channel, limit: limit, continuation: continuation) }
        }
        do {
            let channel = try await make(bootstrap).get()
            return FramedConnection(channel: channel, frames: stream, frameLimit: limit)
        } catch {
            continuation.finish()
            throw error
        }
    }

    /// Sends one frame: the length, then `payload`, written into one buffer.
    public func send<Payload: Collection<UInt8>>(payload: Payload) async throws {
        try await channel.writeAndFlush(Self.frame(payload, allocator: channel.allocator))
    }

    /// Encodes and sends one message.
    public func send<Message: Encodable>(_ message: Message) async throws {
        try await send(payload: ControlProtocol.payload(message))
    }

    /// A frame of `payload` in one buffer (for writers that send without waiting).
    public static func frame<Payload: Collection<UInt8>>(_ payload: Payload, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: payload.count + 4)
        buffer.writeInteger(UInt32(payload.count))
        buffer.writeBytes(payload)
        return buffer
    }

    /// Closes the connection.
    public func close() {
        channel.close(promise: nil)
    }
}
