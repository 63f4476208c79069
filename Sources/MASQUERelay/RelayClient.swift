import Glibc
import NetExtCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// The client side of a relay: one TLS connection (ALPN `h2`) to `netext-server relay` or any
/// MASQUE relay over HTTP/2, and one stream per flow over it. ``carry(socket:toHost:port:)``
/// takes a connected socket (an app's flow, as an app proxy is handed it) and carries its bytes
/// through a CONNECT stream until both sides have ended.
public final class RelayClient: Sendable {
    /// Why a flow could not be carried.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
        /// The relay's status, when it answered.
        public let status: Int?
    }

    private let connection: any Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let authorization: String?

    private init(connection: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, authorization: String?) {
        self.connection = connection
        self.multiplexer = multiplexer
        self.authorization = authorization
    }

    /// Connects to the relay at `host`:`port`, checking its certificate against `trustRoots`
    /// (nil: the system's) for `serverName` (nil: `host`). `token`: a bearer credential.
    public static func connect(
        host: String, port: Int, serverName: String? = nil, trustRoots: NIOSSLTrustRoots? = nil, token: String? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> RelayClient {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["h2"]
        if let trustRoots { configuration.trustRoots = trustRoots }
        let context = try NIOSSLContext(configuration: configuration)
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(10))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port)
            .get()
        let multiplexer = try await channel.eventLoop.flatSubmit {
            channel.eventLoop.makeCompletedFuture {
                // SNI carries names only (RFC 6066 §3); an address is checked against the
                // certificate's IP addresses.
                let name = serverName ?? host
                let sni = IPPrefix.parseAddress(name) == nil ? name : nil
                try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: sni))
                return try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                    mode: .client, connectionConfiguration: RelayHTTP2Settings.connection(extendedConnect: false), streamConfiguration: RelayHTTP2Settings.stream
                ) { stream in stream.close() }  // a relay opens no streams toward its clients
            }
        }.get()
        return RelayClient(connection: channel, multiplexer: multiplexer, authorization: token.map { "Bearer \($0)" })
    }

    /// Carries `socket`'s bytes (connected; the client's from now on, closed when the flow ends)
    /// to `host`:`port` through the relay. Returns once the relay answered 200 and the bytes
    /// flow; throws with the relay's status (and closes `socket`) when it refused.
    public func carry(socket: Int32, toHost host: String, port: UInt16) async throws {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let eventLoop = connection.eventLoop
        let answered = eventLoop.makePromise(of: Void.self)
        let handler = ClientStreamHandler(authority: authority, authorization: authorization, answered: answered)
        let multiplexer = multiplexer
        let stream: any Channel
        do {
            stream = try await eventLoop.flatSubmit {
                multiplexer.createStreamChannel { stream in
                    stream.eventLoop.makeCompletedFuture { try stream.pipeline.syncOperations.addHandler(handler) }
                }
            }.get()
        } catch {
            answered.fail(error)
            _ = Glibc.close(socket)
            throw RelayClient.Failure(description: "could not open a stream to the relay: \(error)", status: nil)
        }
        do {
            try await answered.futureResult.get()
            // The app's socket as a channel on the stream's event loop, glued to it both ways.
            let app = try await ClientBootstrap(group: eventLoop)
                .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(TargetToStream<ByteBuffer>(stream: stream) { $0 })
                    }
                }
                .withConnectedSocket(socket)
                .get()
            eventLoop.execute { handler.attach(app) }
        } catch {
            _ = Glibc.close(socket)
            stream.close(promise: nil)
            throw error
        }
    }

    /// Closes the connection (its streams end with it).
    public func close() async {
        try? await connection.close()
    }
}

/// A flow's stream on the client: sends the CONNECT as soon as the stream is active, learns the
/// answer, then passes the relay's DATA to the app's socket (what arrives before the socket is
/// attached waits); END_STREAM shuts the socket down for writing, a reset closes it.
final class ClientStreamHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let authority: String
    private let authorization: String?
    private let answered: EventLoopPromise<Void>
    private var isAnswered = false
    private var socket: (any Channel)?
    private var waiting: [HTTP2Frame.FramePayload] = []
    private var streamContext: ChannelHandlerContext?

    init(authority: String, authorization: String?, answered: EventLoopPromise<Void>) {
        self.authority = authority
        self.authorization = authorization
        self.answered = answered
    }

    func handlerAdded(context: ChannelHandlerContext) {
        streamContext = context
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers: HPACKHeaders = [":method": "CONNECT", ":authority": authority]
        if let authorization { headers.add(name: "proxy-authorization", value: authorization) }
        context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if !isAnswered {
            guard case .headers(let headers) = frame else { return }
            isAnswered = true
            let status = headers.headers.first(name: ":status").flatMap { Int($0) }
            if status == 200 {
                answered.succeed(())
            } else {
                let reason = headers.headers.first(name: "proxy-status").map { " (\($0))" } ?? ""
                answered.fail(RelayClient.Failure(description: "the relay refused the flow to \(authority) with \(status.map(String.init) ?? "no status")\(reason)", status: status))
                context.close(promise: nil)
            }
            return
        }
        guard let socket else { return waiting.append(frame) }
        forward(frame, to: socket, context: context)
    }

    /// The app's socket is ready: what waited goes first.
    func attach(_ socket: any Channel) {
        self.socket = socket
        guard let context = streamContext else { return }
        // The socket was read from the start: the stream may have filled (and the socket's
        // reading stopped) before it was attached here, where the stream's reopening is heard.
        _ = socket.setOption(ChannelOptions.autoRead, value: context.channel.isWritable)
        let frames = waiting
        waiting = []
        for frame in frames { forward(frame, to: socket, context: context) }
    }

    private func forward(_ frame: HTTP2Frame.FramePayload, to socket: any Channel, context: ChannelHandlerContext) {
        switch frame {
        case .data(let data):
            if case .byteBuffer(let bytes) = data.data, bytes.readableBytes > 0 {
                socket.writeAndFlush(bytes, promise: nil)
                // The app reads slowly: stop reading the stream until its socket drains
                // (TargetToStream reopens it).
                if !socket.isWritable { context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in } }
            }
            if data.endStream { socket.close(mode: .output, promise: nil) }
        case .rstStream:
            socket.close(promise: nil)
        default:
            break
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The stream's window opened or closed: read the app's socket accordingly.
        if let socket { _ = socket.setOption(ChannelOptions.autoRead, value: context.channel.isWritable) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !isAnswered {
            isAnswered = true
            answered.fail(RelayClient.Failure(description: "the relay closed the stream for \(authority) before answering", status: nil))
        }
        socket?.close(promise: nil)
        context.fireChannelInactive()
    }
}
