import Glibc
import NIOCore
import NIOPosix

/// A `RelayTransport` without a relay: flows go straight to their destinations from this
/// process. Per-app relays carry a bound app's flows the relays do not take this way (an app
/// proxy cannot hand a flow back to be sent on), and tests use it as the transport that needs
/// no server.
public struct DirectRelayTransport: RelayTransport {
    private let group: any EventLoopGroup

    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.group = group
    }

    public var isConnected: Bool { true }

    /// Connects to `host`:`port` and joins the socket to it both ways (half-closes included).
    /// A socket set to reset when closed is closed in order when the destination ended in order.
    public func carry(socket: Int32, toHost host: String, port: UInt16, ended: (@Sendable () -> Void)?) async throws {
        let eventLoop = group.next()
        let (appSide, targetSide) = RelayGlue.pair(firstBeforeOrderlyClose: {
            var off = linger(l_onoff: 0, l_linger: 0)
            setsockopt(socket, SOL_SOCKET, SO_LINGER, &off, socklen_t(MemoryLayout<linger>.size))
        })
        let target: any Channel
        do {
            target = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(.seconds(10))
                .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .channelOption(ChannelOptions.autoRead, value: false)
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(targetSide) } }
                .connect(host: host, port: Int(port))
                .get()
        } catch {
            _ = Glibc.close(socket)
            ended?()
            throw RelayClient.Failure(description: "could not reach \(host):\(port) directly: \(error)", status: nil)
        }
        do {
            let app = try await ClientBootstrap(group: eventLoop)
                .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(appSide) } }
                .withConnectedSocket(socket)
                .get()
            if let ended { app.closeFuture.whenComplete { _ in ended() } }
            // Both ends are glued: the target may be read now.
            _ = target.setOption(ChannelOptions.autoRead, value: true)
        } catch {
            _ = Glibc.close(socket)
            target.close(promise: nil)
            ended?()
            throw error
        }
    }

    public func openUDP(toHost host: String, port: UInt16) async throws -> any RelayDatagramPath {
        try await DirectDatagramPath.open(toHost: host, port: port, group: group)
    }

    public func connect(through next: RelayEndpoint) async throws -> any RelayTransport {
        throw RelayClient.Failure(description: "a direct path has no relay to reach \(next.host) through", status: nil)
    }

    public func close() async {}
}

/// A UDP flow straight to its destination: a connected datagram socket.
final class DirectDatagramPath: RelayDatagramPath, Sendable {
    let datagrams: AsyncStream<[UInt8]>
    private let channel: any Channel

    private init(channel: any Channel, datagrams: AsyncStream<[UInt8]>) {
        self.channel = channel
        self.datagrams = datagrams
    }

    static func open(toHost host: String, port: UInt16, group: any EventLoopGroup) async throws -> DirectDatagramPath {
        let target = try SocketAddress.makeAddressResolvingHost(host, port: Int(port))
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(256))
        let channel = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Answers(continuation: continuation)) }
            }
            .bind(host: target.protocol == .inet6 ? "::" : "0.0.0.0", port: 0)
            .flatMap { channel in channel.connect(to: target).map { channel } }
            .get()
        return DirectDatagramPath(channel: channel, datagrams: stream)
    }

    @discardableResult
    func send(_ payload: [UInt8]) -> Bool {
        guard payload.count <= RelayDatagramFlow.maximumPayload, channel.isActive, let remote = channel.remoteAddress else { return false }
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: remote, data: ByteBuffer(bytes: payload)), promise: nil)
        return true
    }

    func close() {
        channel.close(promise: nil)
    }

    /// The destination's datagrams into the stream; its end finishes it.
    private final class Answers: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let continuation: AsyncStream<[UInt8]>.Continuation

        init(continuation: AsyncStream<[UInt8]>.Continuation) {
            self.continuation = continuation
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            continuation.yield(Array(unwrapInboundIn(data).data.readableBytesView))
        }

        func channelInactive(context: ChannelHandlerContext) {
            continuation.finish()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // An ICMP error (port unreachable) on a connected socket: the flow goes on.
        }
    }
}
