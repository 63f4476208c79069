import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// Where a load goes: scheme, host and port (RFC 6454 §4).
struct HTTPOrigin: Hashable, Sendable, CustomStringConvertible {
    var isSecure: Bool
    var host: String
    var port: Int

    var description: String { "\(isSecure ? "https" : "http")://\(hostForURL):\(port)" }
    /// An IPv6 literal in brackets (a byte search: Foundation's `contains` of a string is a
    /// locale-aware search, measurable per load).
    var hostForURL: String { host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host }
    /// The Host header / :authority (the port left out when it is the scheme's default).
    var authority: String { port == (isSecure ? 443 : 80) ? hostForURL : "\(hostForURL):\(port)" }
}

/// What a connection negotiated, for ``URLSessionTaskTransactionMetrics``.
struct ConnectionFacts: Sendable {
    var protocolName: String
    var tlsVersion: String?
    var certificate: CertificateFacts?
    /// The leaf certificate, DER (for the delegate's server trust challenge).
    var certificateDER: [UInt8]?
}

/// One open connection to an origin: HTTP/1.1 (one exchange at a time) or HTTP/2 (streams
/// multiplexed, RFC 9113 §5), chosen by ALPN (RFC 7301).
final class HTTPConnection: @unchecked Sendable {
    // @unchecked: `mode` and `facts` are set before the connection is handed out and never after.
    enum Mode {
        case http1(ResponseCollector)
        case http2(HTTP2Exchanges)
    }

    let channel: any Channel
    let mode: Mode
    let facts: ConnectionFacts

    var isHTTP2: Bool { if case .http2 = mode { true } else { false } }
    var isUsable: Bool {
        if case .http2(let exchanges) = mode, !exchanges.acceptsStreams.load(ordering: .relaxed) { return false }
        return channel.isActive
    }

    private init(channel: any Channel, mode: Mode, facts: ConnectionFacts) {
        self.channel = channel
        self.mode = mode
        self.facts = facts
    }

    /// Opens a connection to `origin`; TLS (when the origin is https) with `context`, the
    /// server's certificate held to `requirements`.
    ///
    /// Everything the connection needs is put in its pipeline by the time its first byte can
    /// be read: the HTTP/1.1 codec at once for cleartext, and for TLS the protocol's handlers
    /// from inside the handshake-completed event (an HTTP/2 server's SETTINGS may follow its
    /// handshake in the same read, and a handler added any later would miss it).
    static func open(
        to origin: HTTPOrigin, address: SocketAddress?, proxy: ConnectionProxy?, proxyCredential: URLCredential? = nil, context: NIOSSLContext?,
        requirements: ATSRequirements,
        connectTimeout: TimeAmount, eventLoop: any EventLoop, requiredInterface: String? = nil, acceptedLeaf: [UInt8]? = nil
    ) -> EventLoopFuture<HTTPConnection> {
        let ready = eventLoop.makePromise(of: HTTPConnection.self)
        // What goes in the pipeline once bytes may flow to the origin (at once, or once a
        // proxy's tunnel is up).
        let setUp: @Sendable (any Channel) throws -> Void = { channel in
            guard let context else {
                let collector = ResponseCollector()
                // Bytes after a 101's head go on to whoever takes the connection over (a data
                // task becoming a stream task) when the decoder is taken out.
                try channel.pipeline.syncOperations.addHTTPClientHandlers(leftOverBytesStrategy: .forwardBytes)
                try channel.pipeline.syncOperations.addHandler(collector)
                ready.succeed(HTTPConnection(channel: channel, mode: .http1(collector), facts: ConnectionFacts(protocolName: "http/1.1")))
                return
            }
            let serverName = IPLiteral(origin.host) == nil ? origin.host : nil
            if let acceptedLeaf {
                // The session's delegate accepted this server's certificate where default
                // evaluation did not: exactly that leaf is trusted, nothing else.
                try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: serverName) { certificates, verdict in
                    verdict.succeed((try? certificates.first?.toDERBytes()) == acceptedLeaf ? .certificateVerified : .failed)
                })
            } else {
                try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: serverName))
            }
            try channel.pipeline.syncOperations.addHandler(HandshakeWaiter(ready: ready) { channel, protocolName in
                try Self.configureAfterHandshake(channel, protocolName: protocolName, host: origin.host, requirements: requirements)
            })
        }
        // A SOCKS proxy always tunnels; an HTTP proxy tunnels https (CONNECT) and takes http
        // requests with absolute URLs.
        let tunnel: ConnectionProxy? = switch proxy {
        case .socks5?: proxy
        case .http? where origin.isSecure: proxy
        default: nil
        }
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                InterfaceBinding.bind(channel, to: requiredInterface).flatMapThrowing {
                    guard let tunnel else { return try setUp(channel) }
                    try channel.pipeline.syncOperations.addHandler(ProxyTunnelHandler(
                        proxy: tunnel, credential: proxyCredential, host: origin.host, port: origin.port,
                        ready: { context in
                            do { try setUp(context.channel) } catch { ready.fail(error) }
                        },
                        failed: { ready.fail($0) }))
                }
            }
        let connecting: EventLoopFuture<any Channel>
        if let proxy {
            connecting = bootstrap.connect(host: proxy.host, port: proxy.port)
        } else {
            connecting = address.map { bootstrap.connect(to: $0) } ?? bootstrap.connect(host: origin.host, port: origin.port)
        }
        return connecting.flatMapError { error in
            let failure = HTTPLoadError.cannotConnect(host: proxy.map { "the proxy \($0)" } ?? "\(origin)", reason: ConnectErrorText.describe(error))
            ready.fail(failure)
            return eventLoop.makeFailedFuture(failure)
        }.flatMap { channel -> EventLoopFuture<HTTPConnection> in
            // The handshake gets as long as the connect did.
            let seconds = Double(connectTimeout.nanoseconds) / 1e9
            let timer = channel.eventLoop.scheduleTask(in: connectTimeout) {
                ready.fail(HTTPLoadError.tlsFailed(host: origin.host, reason: "the TLS handshake did not finish within \(seconds) s"))
            }
            return ready.futureResult.always { _ in timer.cancel() }.flatMapError { error in
                channel.close(promise: nil)
                return eventLoop.makeFailedFuture(TLSErrorText.loadError(error, host: origin.host, requirements: requirements))
            }
        }
    }

    /// On the event loop, in the handshake-completed event: ATS's certificate rules (TLS has
    /// accepted the chain, its dates and the name; nothing of a request has been sent), then
    /// the handlers of the protocol ALPN chose.
    private static func configureAfterHandshake(
        _ channel: any Channel, protocolName: String?, host: String, requirements: ATSRequirements
    ) throws -> HTTPConnection {
        let operations = channel.pipeline.syncOperations
        guard let certificate = try operations.nioSSL_peerCertificate() else {
            throw HTTPLoadError.tlsFailed(host: host, reason: "the server presented no certificate")
        }
        let certificateFacts: CertificateFacts
        let der: [UInt8]
        do {
            der = try certificate.toDERBytes()
            certificateFacts = try CertificateFacts(der: der)
        } catch {
            throw HTTPLoadError.tlsFailed(host: host, reason: "the server's certificate cannot be read: \(error)")
        }
        if let refusal = ATSCertificateCheck.refusal(certificateFacts, requirements) { throw HTTPLoadError.refused(refusal) }
        let facts = ConnectionFacts(
            protocolName: protocolName ?? "http/1.1", tlsVersion: try operations.nioSSL_tlsVersion().map(Self.name),
            certificate: certificateFacts, certificateDER: der)
        if protocolName == "h2" {
            var connection = NIOHTTP2Handler.ConnectionConfiguration()
            // No server push (RFC 9113 §6.5.2, SETTINGS_ENABLE_PUSH 0; a PUSH_PROMISE anyway is
            // a connection error, §8.4). The server may send 8 MiB ahead on each stream and 16 MiB
            // on the connection (WINDOW_UPDATE, RFC 9113 §6.9), not 64 KiB. Each stream starts
            // with its 8 MiB (SETTINGS_INITIAL_WINDOW_SIZE): from the default 64 KiB it would
            // take a WINDOW_UPDATE of its own after its first DATA, one more write per load.
            connection.initialSettings = nioDefaultSettings + [
                HTTP2Setting(parameter: .enablePush, value: 0), HTTP2Setting(parameter: .initialWindowSize, value: HTTP2Exchanges.streamWindow),
            ]
            // Frames straight to the exchanges, no stream channels: HTTP2Exchanges opens the windows.
            try operations.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: connection))
            let exchanges = HTTP2Exchanges()
            try operations.addHandler(exchanges)
            return HTTPConnection(channel: channel, mode: .http2(exchanges), facts: facts)
        }
        let collector = ResponseCollector()
        try operations.addHTTPClientHandlers(leftOverBytesStrategy: .forwardBytes)
        try operations.addHandler(collector)
        return HTTPConnection(channel: channel, mode: .http1(collector), facts: facts)
    }

    /// One exchange: on an HTTP/1.1 connection (leased to one load at a time) or on a new
    /// stream of an HTTP/2 one.
    func exchange(_ request: PreparedRequest, limit: Int, sink: BodySink? = nil, timeout: TimeAmount) -> EventLoopFuture<RawResponse> {
        let eventLoop = channel.eventLoop
        let promise = eventLoop.makePromise(of: RawResponse.self)
        let seconds = Double(timeout.nanoseconds) / 1e9
        // One hop onto the event loop for the timer and the request together (none for a
        // caller already on it: a task on the session's ``EventLoopTaskExecutor``).
        let start: @Sendable () -> Void = { [mode, channel] in
            // `timeoutIntervalForRequest` is how long the load may go without a byte of its
            // answer (Foundation's meaning), not how long the whole answer may take.
            let activity = AnswerActivity()
            activity.watch(on: eventLoop, idleLimit: timeout, until: promise.futureResult) {
                promise.fail(HTTPLoadError.timedOut(url: request.url, seconds: seconds))
            }
            switch mode {
            case .http1(let collector):
                collector.send(request, limit: limit, sink: sink, activity: activity, promise: promise)
                // A failed exchange (timed out mid-answer) leaves the connection unusable.
                promise.futureResult.whenFailure { _ in channel.close(promise: nil) }
            case .http2(let exchanges):
                exchanges.send(request, limit: limit, sink: sink, activity: activity, promise: promise)
            }
        }
        if eventLoop.inEventLoop { start() } else { eventLoop.execute(start) }
        return promise.futureResult
    }

    func close() { channel.close(promise: nil) }

    static func name(_ version: TLSVersion) -> String {
        switch version {
        case .tlsv1: "TLS 1.0"
        case .tlsv11: "TLS 1.1"
        case .tlsv12: "TLS 1.2"
        case .tlsv13: "TLS 1.3"
        }
    }
}

/// When the answer last moved: the exchange's timer fires only after `idleLimit` without a
/// byte, re-arming itself for the rest of the interval while bytes keep coming.
final class AnswerActivity: @unchecked Sendable {
    // @unchecked: touched only on the exchange's event loop.
    var lastRead = NIODeadline.now()
    private var timer: Scheduled<Void>?
    private var expire: (() -> Void)?

    func watch(on eventLoop: any EventLoop, idleLimit: TimeAmount, until done: EventLoopFuture<RawResponse>, expire: @escaping () -> Void) {
        self.expire = expire
        arm(eventLoop, delay: idleLimit, idleLimit: idleLimit)
        done.whenComplete { _ in
            self.timer?.cancel()
            self.expire = nil
        }
    }

    private func arm(_ eventLoop: any EventLoop, delay: TimeAmount, idleLimit: TimeAmount) {
        timer = eventLoop.scheduleTask(in: delay) {
            let quiet = NIODeadline.now() - self.lastRead
            if quiet >= idleLimit { self.expire?() } else { self.arm(eventLoop, delay: idleLimit - quiet, idleLimit: idleLimit) }
        }
    }
}

/// Waits for the TLS handshake, then (in the same event, before any byte after it is read)
/// sets the connection up for the protocol ALPN chose and hands it over.
private final class HandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny
    private let ready: EventLoopPromise<HTTPConnection>
    private let configure: (any Channel, String?) throws -> HTTPConnection

    init(ready: EventLoopPromise<HTTPConnection>, configure: @escaping (any Channel, String?) throws -> HTTPConnection) {
        self.ready = ready
        self.configure = configure
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let protocolName) = event {
            do {
                let connection = try configure(context.channel, protocolName)
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                ready.succeed(connection)
            } catch {
                ready.fail(error)
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        ready.fail(HandshakeClosed())
        context.fireChannelInactive()
    }
}

/// The server closed the connection during the TLS handshake.
struct HandshakeClosed: Error {}
