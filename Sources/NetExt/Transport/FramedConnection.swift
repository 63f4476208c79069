import NetExtCore
import NetExtIPC
import NIOCore
import NIOPosix

/// A connection that carries control-protocol frames: over a Unix socket to netextd, or over
/// the socketpair a provider inherits. Inbound frames arrive on `frames`; the stream ends when
/// the peer goes away.
public final class FramedConnection: Sendable {
    public let channel: any Channel
    public let frames: AsyncStream<[UInt8]>

    private init(channel: any Channel, frames: AsyncStream<[UInt8]>) {
        self.channel = channel
        self.frames = frames
    }

    /// Installs the frame handlers on a fresh channel and returns the connection.
    public static func attach(to channel: any Channel) throws -> FramedConnection {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameChannelDecoder()))
        try channel.pipeline.syncOperations.addHandler(FrameStreamHandler(continuation: continuation))
        return FramedConnection(channel: channel, frames: stream)
    }

    /// Connects to a Unix socket.
    public static func connect(unixSocketPath path: String) async throws -> FramedConnection {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(unixDomainSocketPath: path).get()
        return try await channel.eventLoop.submit { try attach(to: channel) }.get()
    }

    /// Adopts an already connected socket (for example descriptor 3 of a provider).
    public static func adopt(descriptor: Int32) async throws -> FramedConnection {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .withConnectedSocket(descriptor).get()
        return try await channel.eventLoop.submit { try attach(to: channel) }.get()
    }

    /// Sends one frame.
    public func send(frame payload: [UInt8]) async throws {
        var buffer = channel.allocator.buffer(capacity: payload.count + 4)
        buffer.writeInteger(UInt32(payload.count))
        buffer.writeBytes(payload)
        try await channel.writeAndFlush(buffer)
    }

    /// Encodes and sends one message.
    public func send<Message: Encodable>(_ message: Message) async throws {
        try await send(frame: Array(ControlProtocol.makeEncoder().encode(message)))
    }

    /// Closes the connection.
    public func close() {
        channel.close(promise: nil)
    }
}
