import Dispatch
import Logging
import NetExtCore
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix

/// A small HTTP server on SwiftNIO shared by netext-server's roles (PIR, issuer, Oblivious
/// HTTP gateway and relay): HTTP/1.1, and with TLS HTTP/2 when the client offers `h2` in ALPN
/// (RFC 9113 §3.2; each stream is one request, answered by the same handler as an HTTP/1.1
/// request, through NIOHTTP2's HTTP/1 codec). A request's head is shown to the responder first (`admit`: one
/// without credentials is refused before its body is read); the body is then collected whole
/// (up to the responder's limit, else 413, and within the server's buffered-bytes budget,
/// else 503), answered by an `HTTPResponder` off the event loop, and logged as method,
/// endpoint label, status and duration only: no peer addresses, headers, queries or bodies.
/// Connections are capped (in all and per source), each request must arrive within a deadline, and a connection is
/// closed after an error answer (`HTTPServerLimits`).
public final class HTTPServer: RunnableHTTPServer {
    public let responder: any HTTPResponder
    let logger: Logger
    let group: MultiThreadedEventLoopGroup
    let usage: HTTPServerUsage
    /// TLS to serve with; nil serves plain HTTP (loopback, or behind a TLS-terminating proxy).
    let tls: ServerTLS?
    /// Where requests are counted and timed, and what `GET /metrics` serves (nil: neither).
    let metrics: HTTPServerMetrics?

    public init(
        responder: any HTTPResponder, logger: Logger, eventLoops: Int = 1, limits: HTTPServerLimits = HTTPServerLimits(), tls: ServerTLS? = nil,
        metrics: HTTPServerMetrics? = nil
    ) {
        self.responder = responder
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, eventLoops))
        usage = HTTPServerUsage(limits: limits)
        self.tls = tls
        self.metrics = metrics
    }

    /// Whether connections are TLS.
    public var servesTLS: Bool { tls != nil }

    /// Connections open now.
    public var openConnections: Int { usage.openConnections }

    /// Request body bytes held in memory now.
    public var bufferedBodyBytes: Int { usage.buffered }

    /// Binds and starts serving; returns the channel and the bound port (useful with port 0).
    public func start(host: String, port: Int) async throws -> (any Channel, Int) {
        let responder = self.responder, logger = self.logger, usage = self.usage, tls = self.tls, metrics = self.metrics
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                // The connection counter and deadline come first, so a TLS handshake never
                // started or never finished is held against the same caps and deadline as a
                // request never sent.
                // The initializer runs on the channel's event loop.
                let limiter = HTTPConnectionLimiter(usage: usage)
                do {
                    try channel.pipeline.syncOperations.addHandler(limiter)
                    if let tls { try channel.pipeline.syncOperations.addHandler(tls.handler()) }
                } catch { return channel.eventLoop.makeFailedFuture(error) }
                let requests: @Sendable () -> HTTPServerChannelHandler = {
                    HTTPServerChannelHandler(responder: responder, logger: logger, usage: usage, limiter: limiter, metrics: metrics)
                }
                guard tls != nil else { return Self.configureHTTP1(channel, requests: requests) }
                // ALPN decides (no h2 without TLS: a plain port serves HTTP/1.1 only).
                return channel.configureHTTP2SecureUpgrade(
                    h2ChannelConfigurator: { connection in
                        connection.configureHTTP2Pipeline(
                            mode: .server, connectionConfiguration: Self.http2Connection, streamConfiguration: Self.http2Stream
                        ) { stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandlers(HTTP2FramePayloadToHTTP1ServerCodec(), requests())
                            }
                        }.map { _ in () }
                    },
                    http1ChannelConfigurator: { connection in Self.configureHTTP1(connection, requests: requests) })
            }
            .bind(host: host, port: port).get()
        return (channel, channel.localAddress?.port ?? port)
    }

    /// HTTP/1.1 on a connection: NIO's parser, one request at a time (pipelined ones wait), and
    /// a 400 for what does not parse.
    static func configureHTTP1(_ channel: any Channel, requests: @escaping @Sendable () -> HTTPServerChannelHandler) -> EventLoopFuture<Void> {
        channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(requests()) }
        }
    }

    /// The HTTP/2 settings a connection announces (RFC 9113 §6.5.2): at most 100 requests in
    /// flight on one connection, header lists of at most 16 KiB, and 1 MiB per stream before a
    /// window update, so a PIR evaluation key (about 0.8 MB) is not held back by flow control.
    /// Bodies still count against the server's buffered-bytes budget as HTTP/1.1 ones do.
    static let http2Connection: NIOHTTP2Handler.ConnectionConfiguration = {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
            HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
        ]
        return configuration
    }()

    /// Each stream's flow-control target (what a window update restores).
    static let http2Stream: NIOHTTP2Handler.StreamConfiguration = {
        var configuration = NIOHTTP2Handler.StreamConfiguration()
        configuration.targetWindowSize = 1 << 20
        return configuration
    }()

    /// Binds to a parsed `--listen` address.
    public func start(_ address: ListenAddress) async throws -> (any Channel, Int) {
        try await start(host: address.host, port: address.port)
    }

    public func shutdown() async {
        try? await group.shutdownGracefully()
    }
}

/// Collects one request at a time (NIO's pipelining helper holds the next until this one is
/// answered) and hands it to the responder.
final class HTTPServerChannelHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let responder: any HTTPResponder
    let logger: Logger
    let usage: HTTPServerUsage
    private var head: HTTPRequestHead?
    /// The head's fields as the responder sees them (built once per request).
    private var headerFields: [(name: String, value: String)] = []
    private var body: [UInt8] = []
    /// Body bytes of the request being read, reserved from the server's budget.
    private var reserved = 0
    private var refused = false
    /// The connection's caps and deadline, ahead of TLS in the pipeline.
    let limiter: HTTPConnectionLimiter
    let metrics: HTTPServerMetrics?
    private var started: UInt64 = 0

    init(responder: any HTTPResponder, logger: Logger, usage: HTTPServerUsage, limiter: HTTPConnectionLimiter, metrics: HTTPServerMetrics?) {
        self.responder = responder
        self.logger = logger
        self.usage = usage
        self.limiter = limiter
        self.metrics = metrics
    }

    func channelInactive(context: ChannelHandlerContext) {
        releaseBody()
        context.fireChannelInactive()
    }

    private func releaseBody() {
        usage.release(reserved)
        reserved = 0
        body = []
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(head):
            self.head = head
            releaseBody()
            refused = false
            started = DispatchTime.now().uptimeNanoseconds
            headerFields = head.headers.map { (name: $0.name, value: $0.value) }
            let path = Self.split(head.uri).path
            if let builtIn = BuiltInEndpoints.response(method: head.method.rawValue, path: path, responder: responder, metrics: metrics) {
                // Answered at once; the (empty) rest of the request is not read.
                refused = true
                write(builtIn, context: context, head: head, close: !head.isKeepAlive)
                if head.isKeepAlive { limiter.rearmIfIdle() }  // the next request's deadline starts now
                return
            }
            if let refusal = Self.refusal(ofType: head.headers.first(name: "Content-Type"), required: responder.requiredContentType(method: head.method.rawValue, path: path))
                ?? responder.admit(method: head.method.rawValue, path: path, headers: headerFields) {
                refused = true
                write(refusal, context: context, head: head, close: true)
            }
        case var .body(buffer):
            guard !refused, let head else { return }
            let path = Self.split(head.uri).path
            let limit = responder.bodyLimit(method: head.method.rawValue, path: path)
            if body.count + buffer.readableBytes > limit {
                refused = true
                let response = HTTPServerResponse.text(413, "request body of at least \(body.count + buffer.readableBytes) bytes exceeds the \(limit)-byte limit")
                write(response, context: context, head: head, close: true)
                return
            }
            guard usage.reserve(buffer.readableBytes) else {
                refused = true
                write(.text(503, "the server is holding too many request bodies; try again", headers: [("Retry-After", "1")]), context: context, head: head, close: true)
                return
            }
            reserved += buffer.readableBytes
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard !refused, let head else { return }
            limiter.requestBegan()
            let (path, query) = Self.split(head.uri)
            let request = HTTPServerRequest(
                method: head.method.rawValue, path: path, query: query, headers: headerFields, body: body, majorVersion: head.version.major)
            let held = reserved
            body = []
            reserved = 0
            let responder = self.responder, usage = self.usage
            let eventLoop = context.eventLoop
            let bound = NIOLoopBound(context, eventLoop: eventLoop)
            let keepAlive = head.isKeepAlive
            Task {
                let response = await responder.respond(to: request)
                usage.release(held)
                eventLoop.execute {
                    // After an error the connection is closed: whatever the client sends next
                    // is not worth reading (a 401 challenge keeps it, the token comes next).
                    let close = !keepAlive || (response.status >= 400 && response.status != 401)
                    self.write(response, context: bound.value, head: head, close: close)
                    self.limiter.requestEnded()
                }
            }
        }
    }

    static func split(_ uri: String) -> (path: String, query: String?) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, nil) }
        return (String(uri[..<mark]), String(uri[uri.index(after: mark)...]))
    }

    /// 415 when the head's Content-Type is not the required one (case aside; the parser has
    /// already stripped the whitespace around a field value, RFC 9110 §5.5).
    static func refusal(ofType value: String?, required: String?) -> HTTPServerResponse? {
        guard let required else { return nil }
        return value?.lowercased() == required ? nil : .text(415, "Content-Type must be \(required)")
    }

    private func write(_ response: HTTPServerResponse, context: ChannelHandlerContext, head: HTTPRequestHead, close: Bool) {
        // Counted and logged before the bytes go out, so whoever reads the answer can rely on
        // the log line being there.
        let path = Self.split(head.uri).path
        let endpoint = BuiltInEndpoints.serves(path, metrics: metrics) ? path : responder.endpointLabel(path: path)
        let nanoseconds = DispatchTime.now().uptimeNanoseconds - started
        metrics?.record(endpoint: endpoint, status: response.status, nanoseconds: Int64(clamping: nanoseconds))
        // Routine: every request at debug (the metrics count them); refusals a client caused
        // are not the operator's problem either.
        logger.debug("request", metadata: [
            "method": "\(head.method.rawValue)", "path": "\(endpoint)", "status": "\(response.status)", "ms": "\(nanoseconds / 1_000_000)",
        ])
        var headers = HTTPHeaders()
        for (name, value) in response.headers where name.lowercased() != "content-length" { headers.add(name: name, value: value) }
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
        // HTTP/2 has no Connection field (RFC 9113 §8.2.2): closing there ends the stream only,
        // and the connection's other requests go on.
        if close, head.version.major == 1 { headers.replaceOrAdd(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers))), promise: nil)
        if !response.body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: response.body.count)
            buffer.writeBytes(response.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if close {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// The first handler of every connection: counts it against the server's caps (closing it at
/// once when over one) and closes it when a whole request has not arrived within the deadline —
/// from accept, so a TLS handshake that never finishes is held to it too, and again after each
/// response. There is no deadline while a request is being answered: on HTTP/2, while any of
/// the connection's streams is (`requestBegan`/`requestEnded`, called by each stream's
/// `HTTPServerChannelHandler` on the connection's event loop).
final class HTTPConnectionLimiter: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    let usage: HTTPServerUsage
    private var counted = false
    /// Whom the connection is counted against (per-source cap).
    private var source: SourceKey?
    private var channel: (any Channel)?
    private var deadline: Scheduled<Void>?
    /// Requests read whole and not yet answered (HTTP/1.1: 0 or 1; HTTP/2: up to the streams cap).
    private var requestsInProgress = 0

    init(usage: HTTPServerUsage) {
        self.usage = usage
    }

    func channelActive(context: ChannelHandlerContext) {
        let source = context.channel.remoteAddress.flatMap(Self.sourceKey)
        guard usage.openConnection(from: source) else {
            context.close(promise: nil)
            return
        }
        counted = true
        self.source = source
        channel = context.channel
        arm()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        if counted { usage.closeConnection(from: source) }
        counted = false
        channel = nil
        context.fireChannelInactive()
    }

    /// The next request must have arrived whole within the deadline (on the channel's loop).
    func arm() {
        deadline?.cancel()
        guard let channel else { return }
        deadline = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(usage.limits.requestDeadline * 1000))) {
            channel.close(promise: nil)
        }
    }

    /// No deadline (on the channel's loop).
    func disarm() {
        deadline?.cancel()
        deadline = nil
    }

    /// A whole request is in: no deadline while it is answered (on the channel's loop).
    func requestBegan() {
        requestsInProgress += 1
        disarm()
    }

    /// A request was answered: the next one's deadline starts once none is left in progress.
    func requestEnded() {
        requestsInProgress = max(0, requestsInProgress - 1)
        rearmIfIdle()
    }

    /// Restarts the deadline unless a request is being answered.
    func rearmIfIdle() {
        if requestsInProgress == 0 { arm() }
    }

    /// The per-source key of an IP peer; nil for a Unix socket.
    static func sourceKey(of address: SocketAddress) -> SourceKey? {
        switch address {
        case let .v4(peer): withUnsafeBytes(of: peer.address.sin_addr) { SourceKey(address: $0) }
        case let .v6(peer): withUnsafeBytes(of: peer.address.sin6_addr) { SourceKey(address: $0) }
        case .unixDomainSocket: nil
        }
    }

}

/// What a netext-server HTTP role runs: binds a `--listen` address, serves, and shuts down
/// (`HTTPServer`, and servers built on it such as the PIR server).
public protocol RunnableHTTPServer: Sendable {
    /// Binds and starts serving; returns the channel and the bound port (useful with port 0).
    func start(_ address: ListenAddress) async throws -> (any Channel, Int)
    /// Stops serving and releases the server's threads.
    func shutdown() async
}
