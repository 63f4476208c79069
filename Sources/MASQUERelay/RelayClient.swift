import Glibc
import HTTPCapsules
import HTTPFetching
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
        /// The relay's `Proxy-Authenticate` field values, when it asked for a credential (407).
        public let challenges: [String]

        public init(description: String, status: Int?, challenges: [String] = []) {
            self.description = description
            self.status = status
            self.challenges = challenges
        }
    }

    private let connection: any Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    /// The relay's `host:port`, the `:authority` of extended CONNECT requests.
    let relayAuthority: String
    /// Fields every request carries: the credential and the configuration's additional fields.
    let requestFields: [(name: String, value: String)]
    /// The relay's connect-udp URI template's path (RFC 9298 §2).
    let udpPathTemplate: String
    /// One request at a time presents a Privacy Pass token, until admitted.
    let admission: RelayAdmissionGate
    /// Where fresh tokens come from when the relay asks for one (nil: only `requestFields`).
    let tokens: (any RelayTokenSource)?

    private init(connection: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, options: Options) {
        self.connection = connection
        self.multiplexer = multiplexer
        self.relayAuthority = options.authority
        var fields: [(name: String, value: String)] = options.token.map { [("proxy-authorization", "Bearer \($0)")] } ?? []
        fields += options.additionalHeaders.map { ($0.name.lowercased(), $0.value) }
        self.requestFields = fields
        self.udpPathTemplate = options.udpPathTemplate
        self.tokens = options.tokens
        self.admission = RelayAdmissionGate(fields: fields, fetchesTokens: options.tokens != nil)
    }

    /// How to reach and speak to one relay.
    struct Options {
        var host: String
        var port: Int
        var serverName: String?
        var trustRoots: NIOSSLTrustRoots?
        var token: String?
        var additionalHeaders: [(name: String, value: String)]
        var udpPathTemplate: String
        /// DER SubjectPublicKeyInfos; when given, the relay is accepted by its key alone.
        var pinnedPublicKeys: [[UInt8]] = []
        /// The certificate and key presented to the relay (`NERelay.identityData`).
        var identity: RelayClientIdentity?
        /// Fresh Privacy Pass tokens when the relay asks (``RelayTokenSource``).
        var tokens: (any RelayTokenSource)?
        /// The relay is reached through another relay (a socket pair, not its address): a name
        /// that is an address is checked against the certificate's IP addresses here, after
        /// the handshake, since the TLS library checks an address against the peer's.
        var throughRelay = false
        var authority: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// Connects to the relay at `host`:`port`, checking its certificate against `trustRoots`
    /// (nil: the system's) for `serverName` (nil: `host`). `token`: a bearer credential;
    /// `additionalHeaders`: fields added to every request (`NERelay.additionalHTTPHeaderFields`);
    /// `udpPathTemplate`: the relay's connect-udp URI template (RFC 9298 §2). `pinnedPublicKeys`
    /// (DER SubjectPublicKeyInfos, `NERelay.rawPublicKeys`): when given, the relay is accepted if
    /// its certificate carries one of these keys, instead of by its chain and name (RFC 7250's
    /// raw keys are not negotiated by the TLS library here; the key is the relay's identity).
    /// `identity`: a client certificate and key presented to the relay (mutual TLS).
    public static func connect(
        host: String, port: Int, serverName: String? = nil, trustRoots: NIOSSLTrustRoots? = nil, token: String? = nil,
        additionalHeaders: [(name: String, value: String)] = [], udpPathTemplate: String = ConnectUDPTarget.pathPrefix + "{target_host}/{target_port}/",
        pinnedPublicKeys: [[UInt8]] = [], identity: RelayClientIdentity? = nil, tokens: (any RelayTokenSource)? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> RelayClient {
        let options = Options(host: host, port: port, serverName: serverName, trustRoots: trustRoots, token: token,
                              additionalHeaders: additionalHeaders, udpPathTemplate: udpPathTemplate, pinnedPublicKeys: pinnedPublicKeys, identity: identity,
                              tokens: tokens)
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(10))
            .channelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)  // IPPROTO_TCP: socketOption would set SOL_SOCKET 1, SO_DEBUG
            .connect(host: host, port: port)
            .get()
        do {
            return try await establish(on: channel, options: options)
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    /// Connects to a second relay through this one (chained relays, `NERelayManager.relays`):
    /// a CONNECT stream to `host`:`port` carries the second relay's TLS and HTTP/2, so this
    /// relay sees only that an encrypted connection goes there, and the second relay sees this
    /// relay's address, not the client's.
    ///
    /// The stream is carried for a local socket pair whose other end holds the second
    /// connection: swift-nio-ssl asks its channel for `allowRemoteHalfClosure` when TLS ends,
    /// an option an `HTTP2StreamChannel` traps on, so TLS cannot sit on the stream itself.
    public func connectThrough(
        toHost host: String, port: Int, serverName: String? = nil, trustRoots: NIOSSLTrustRoots? = nil, token: String? = nil,
        additionalHeaders: [(name: String, value: String)] = [], udpPathTemplate: String = ConnectUDPTarget.pathPrefix + "{target_host}/{target_port}/",
        pinnedPublicKeys: [[UInt8]] = [], identity: RelayClientIdentity? = nil, tokens: (any RelayTokenSource)? = nil
    ) async throws -> RelayClient {
        var options = Options(host: host, port: port, serverName: serverName, trustRoots: trustRoots, token: token,
                              additionalHeaders: additionalHeaders, udpPathTemplate: udpPathTemplate, pinnedPublicKeys: pinnedPublicKeys, identity: identity,
                              tokens: tokens)
        options.throughRelay = true
        guard let port16 = UInt16(exactly: port) else { throw Failure(description: "port \(port) is out of range", status: nil) }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw Failure(description: "could not make a socket pair for the chained relay (errno \(errno))", status: nil)
        }
        do {
            try await carry(socket: pair[0], toHost: host, port: port16)
        } catch {
            _ = Glibc.close(pair[1])
            throw error
        }
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: eventLoop).withConnectedSocket(pair[1]).get()
        } catch {
            _ = Glibc.close(pair[1])
            throw error
        }
        do {
            return try await Self.establish(on: channel, options: options)
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    /// TLS (ALPN `h2`) and HTTP/2 as a client on `channel`: a TCP connection, or a CONNECT
    /// stream of the relay before in a chain.
    private static func establish(on channel: any Channel, options: Options) async throws -> RelayClient {
        var configuration = TLSConfiguration.makeClientConfiguration()
        // An address reached through a relay: the chain is checked by the TLS library, the
        // address against the certificate below (its peer is a local socket pair).
        let checkedAddress = options.throughRelay && options.pinnedPublicKeys.isEmpty ? IPPrefix.parseAddress(options.serverName ?? options.host) : nil
        if checkedAddress != nil { configuration.certificateVerification = .noHostnameVerification }
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["h2"]
        if let trustRoots = options.trustRoots { configuration.trustRoots = trustRoots }
        if let identity = options.identity {
            configuration.certificateChain = identity.chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(identity.key)
        }
        let context = try NIOSSLContext(configuration: configuration)
        let settingsArrived = channel.eventLoop.makePromise(of: Void.self)
        let multiplexer = try await channel.eventLoop.flatSubmit {
            channel.eventLoop.makeCompletedFuture {
                // SNI carries names only (RFC 6066 §3); an address is checked against the
                // certificate's IP addresses.
                let name = options.serverName ?? options.host
                let sni = IPPrefix.parseAddress(name) == nil ? name : nil
                if options.pinnedPublicKeys.isEmpty {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: sni))
                } else {
                    let pins = options.pinnedPublicKeys
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: sni) { certificates, promise in
                        let key = try? certificates.first?.extractPublicKey().toSPKIBytes()
                        promise.succeed(key.map { pins.contains($0) } == true ? .certificateVerified : .failed)
                    })
                }
                let multiplexer = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                    mode: .client, connectionConfiguration: RelayHTTP2Settings.connection(extendedConnect: false), streamConfiguration: RelayHTTP2Settings.stream
                ) { stream in stream.close() }  // a relay opens no streams toward its clients
                try channel.pipeline.syncOperations.addHandler(RemoteSettingsWatcher(arrived: settingsArrived))
                return multiplexer
            }
        }.get()
        // The relay's SETTINGS first: they say whether it takes extended CONNECT (RFC 8441 §3),
        // and their arrival means the TLS handshake and the certificate check succeeded.
        let timeout = channel.eventLoop.scheduleTask(in: .seconds(10)) {
            settingsArrived.fail(Failure(description: "the relay sent no HTTP/2 SETTINGS within 10 s", status: nil))
        }
        defer { timeout.cancel() }
        try await settingsArrived.futureResult.get()
        if let address = checkedAddress {
            // Before any request (and its credential) is sent.
            let covered = try await channel.eventLoop.flatSubmit {
                channel.pipeline.handler(type: NIOSSLClientHandler.self).map { handler in
                    handler.peerCertificate.map { RelayCertificateAddress.covers($0, address: address) } ?? false
                }
            }.get()
            guard covered else {
                channel.close(promise: nil)
                throw Failure(description: "the relay's certificate is not for \(IPPrefix.format(address)) (none of its IP addresses is)", status: nil)
            }
        }
        return RelayClient(connection: channel, multiplexer: multiplexer, options: options)
    }

    /// Opens a stream on this connection with `handler` as its only handler.
    func openStream(_ handler: some ChannelHandler & Sendable) async throws -> any Channel {
        let multiplexer = multiplexer
        return try await connection.eventLoop.flatSubmit {
            multiplexer.createStreamChannel { stream in
                stream.eventLoop.makeCompletedFuture { try stream.pipeline.syncOperations.addHandler(handler) }
            }
        }.get()
    }

    /// The event loop of this connection (and of its streams).
    var eventLoop: any EventLoop { connection.eventLoop }

    /// Carries `socket`'s bytes (connected; the client's from now on, closed when the flow ends)
    /// to `host`:`port` through the relay. Returns once the relay answered 200 and the bytes
    /// flow; throws with the relay's status (and closes `socket`) when it refused.
    ///
    /// `ended` is called once the socket is closed, whichever way the flow ended. A socket set
    /// to reset when closed (`SO_LINGER` 0, as netextd hands an app's flow over) is closed in
    /// order when the flow ends in order (END_STREAM from the relay), and reset otherwise.
    public func carry(socket: Int32, toHost host: String, port: UInt16, ended: (@Sendable () -> Void)? = nil) async throws {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let eventLoop = connection.eventLoop
        let (stream, handler): (any Channel, ClientStreamHandler)
        do {
            // The socket is adopted only once the relay accepted, so a refused request can be
            // sent again (with a token) for the same socket.
            (stream, handler) = try await admitting { fields in
                let answered = eventLoop.makePromise(of: Void.self)
                let handler = ClientStreamHandler(authority: authority, fields: fields, socketDescriptor: socket, answered: answered)
                return (try await self.openAnswered(handler, answered: answered), handler)
            }
        } catch {
            _ = Glibc.close(socket)
            ended?()
            throw error
        }
        do {
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
            if let ended { app.closeFuture.whenComplete { _ in ended() } }
            eventLoop.execute { handler.attach(app) }
        } catch {
            _ = Glibc.close(socket)
            stream.close(promise: nil)
            ended?()
            throw error
        }
    }

    /// The relay's refusal in its answer to a request (any status but 2xx, RFC 9113 §8.5, RFC
    /// 9298 §3.3), said with the status and its Proxy-Status (RFC 9209); nil when it accepted.
    static func refusal(in headers: HPACKHeaders, of what: String) -> Failure? {
        let status = headers.first(name: ":status").flatMap { Int($0) }
        if let status, (200..<300).contains(status) { return nil }
        let reason = headers.first(name: "proxy-status").map { " (\($0))" } ?? ""
        return Failure(
            description: "the relay refused \(what) with \(status.map(String.init) ?? "no status")\(reason)", status: status,
            challenges: status == 407 ? headers["proxy-authenticate"] : [])
    }

    /// Whether the connection to the relay is still up.
    public var isConnected: Bool { connection.isActive }

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
    private let fields: [(name: String, value: String)]
    private let socketDescriptor: Int32
    private var answer: RelayAnswer
    private var socket: (any Channel)?
    private var waiting: [HTTP2Frame.FramePayload] = []
    private var streamContext: ChannelHandlerContext?

    init(authority: String, fields: [(name: String, value: String)], socketDescriptor: Int32, answered: EventLoopPromise<Void>) {
        self.authority = authority
        self.fields = fields
        self.socketDescriptor = socketDescriptor
        self.answer = RelayAnswer(promise: answered, what: "the flow to \(authority)")
    }

    func handlerAdded(context: ChannelHandlerContext) {
        streamContext = context
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers: HPACKHeaders = [":method": "CONNECT", ":authority": authority]
        for field in fields { headers.add(name: field.name, value: field.value) }
        context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch answer.take(frame) {
        case .notTaken: break
        case .taken: return
        case .refused:
            context.close(promise: nil)
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
            if data.endStream {
                // An orderly end: the app reads it as one, not as a reset.
                var off = linger(l_onoff: 0, l_linger: 0)
                if socket.isActive { setsockopt(socketDescriptor, SOL_SOCKET, SO_LINGER, &off, socklen_t(MemoryLayout<linger>.size)) }
                socket.close(mode: .output, promise: nil)
            }
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
        answer.streamEnded()
        socket?.close(promise: nil)
        context.fireChannelInactive()
    }
}

/// Learns when the peer's first SETTINGS frame arrives (frames of stream 0 pass the
/// multiplexer), or why the connection failed before it did.
final class RemoteSettingsWatcher: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame

    private let arrived: EventLoopPromise<Void>

    init(arrived: EventLoopPromise<Void>) { self.arrived = arrived }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .settings(.settings) = unwrapInboundIn(data).payload { arrived.succeed(()) }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        arrived.fail(RelayClient.Failure(description: "the connection to the relay failed: \(TLSFailure.describe(error))", status: nil))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        arrived.fail(RelayClient.Failure(description: "the relay closed the connection before HTTP/2 began", status: nil))
        context.fireChannelInactive()
    }
}
