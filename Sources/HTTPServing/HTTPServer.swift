import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// The HTTP server every netext-server role runs (PIR, issuer, Oblivious HTTP gateway and
/// relay, and netextd's metrics listener): HTTP/1.1 on Hummingbird 2, and with TLS HTTP/2 when
/// the client offers `h2` in ALPN (RFC 9113 §3.2) on NetExt's own stream layer over
/// swift-nio-http2 (`SecureHTTPChannel`, `HTTP2StreamExchange`), each stream one request
/// answered by the same `HTTPResponder`.
///
/// What NetExt adds around the channels (`HTTPExchange`, `HTTPConnectionLimiter`,
/// `HTTPExchangeTracker`): a request's head is shown to the responder first (`admit`: one
/// without credentials is refused before its body is read); the body is collected whole (up to
/// the responder's limit, else 413, and within the server's buffered-bytes budget, else 503),
/// answered off the event loop, and logged as method, endpoint label, status and duration only:
/// no peer addresses, headers, queries or bodies. Connections are capped (in all and per
/// source), each request must arrive whole within a deadline counted from accept (so a TLS
/// handshake never finished is held to it too), and a connection is closed after an error
/// answer (`HTTPServerLimits`). `GET /healthz`, `/readyz` and `/metrics` are answered by the
/// server itself. ``shutdown()`` drains: no new connections, requests being answered finish
/// (for at most `HTTPServerLimits.drainDeadline`), idle connections close (HTTP/2: GOAWAY).
public final class HTTPServer: RunnableHTTPServer {
    public let responder: any HTTPResponder
    let logger: Logger
    let group: MultiThreadedEventLoopGroup
    let usage: HTTPServerUsage
    /// TLS to serve with; nil serves plain HTTP (loopback, or behind a TLS-terminating proxy).
    let tls: ServerTLS?
    /// Where requests are counted and timed, and what `GET /metrics` serves (nil: neither).
    let metrics: HTTPServerMetrics?
    /// The listeners started and not yet drained.
    private let running = Mutex<[RunningListener]>([])

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

    /// Binds and starts serving; returns the bound port (useful with port 0). Fails with the
    /// system's error when the address cannot be bound. The listening socket stays the server's:
    /// ``shutdown()`` closes it as the first step of the drain.
    public func start(host: String, port: Int) async throws -> Int {
        let exchange = HTTPExchange(responder: responder, logger: logger, usage: usage, metrics: metrics)
        let respond: HTTPChannelHandler.Responder = { request, writer, channel in
            try await exchange.serve(request, writer: writer, channel: channel)
        }
        // Hummingbird's idle timers stay off: the limiter's request deadline is stricter (a
        // request trickled in byte by byte does not reset it).
        let perRequest = HTTP1Channel.Configuration(additionalChannelHandlers: [HTTPExchangeTracker()], idleTimeout: nil)
        let listener: RunningListener
        if let tls {
            let secure = try SecureHTTPChannel(tls: tls, http1: HTTP1Channel(responder: respond, configuration: perRequest), exchange: exchange)
            listener = try await RunningListener.start(LimitedChildChannel(base: secure, usage: usage), host: host, port: port, group: group, logger: logger)
        } else {
            let http1 = HTTP1Channel(responder: respond, configuration: perRequest)
            listener = try await RunningListener.start(LimitedChildChannel(base: http1, usage: usage), host: host, port: port, group: group, logger: logger)
        }
        running.withLock { $0.append(listener) }
        return listener.port
    }

    /// Binds to a parsed `--listen` address.
    public func start(_ address: ListenAddress) async throws -> Int {
        try await start(host: address.host, port: address.port)
    }

    /// Drains every listener (see the type's description), then releases the server's threads.
    public func shutdown() async {
        let listeners = running.withLock { listeners in
            defer { listeners = [] }
            return listeners
        }
        let deadline = Duration.milliseconds(Int64(usage.limits.drainDeadline * 1000))
        // All at once: no listener keeps accepting while another drains.
        await withTaskGroup(of: Void.self) { group in
            for listener in listeners { group.addTask { await listener.drain(within: deadline) } }
        }
        try? await group.shutdownGracefully()
    }
}

/// One bound Hummingbird server and the task running it.
struct RunningListener: Sendable {
    /// The port the listening socket is bound to.
    let port: Int
    /// Starts a graceful shutdown and returns when it has finished.
    let shutdownGracefully: @Sendable () async -> Void
    /// Runs the server; ends once the listener is closed and every connection's task is done.
    let serving: Task<Void, Never>

    /// Binds `childChannel`'s server to `host:port` and runs it in a task; returns once it
    /// listens, or throws the bind failure.
    static func start<Child: ServerChildChannel>(
        _ childChannel: Child, host: String, port: Int, group: MultiThreadedEventLoopGroup, logger: Logger
    ) async throws -> RunningListener {
        // Hummingbird's own lines ("Server started and listening on …") duplicate the role's
        // "serving" line; its warnings and errors still come through.
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .notice)
        let (bound, boundSink) = AsyncStream<Result<any Channel, any Error>>.makeStream()
        let server = Server(
            childChannelSetup: childChannel,
            configuration: ServerConfiguration(address: .hostname(host, port: port), backlog: 1024),
            onServerRunning: { channel in boundSink.yield(.success(channel)) }, eventLoopGroup: group, logger: quiet)
        let serving = Task {
            do { try await server.run() } catch { boundSink.yield(.failure(error)) }
            boundSink.finish()
        }
        for await outcome in bound {
            let channel = try outcome.get()
            return RunningListener(
                port: channel.localAddress?.port ?? port, shutdownGracefully: { try? await server.shutdownGracefully() }, serving: serving)
        }
        throw ListenerStopped()
    }

    /// Shuts down gracefully and waits, at most `deadline`, until every connection's task is
    /// done (so none is left to touch the event loops once they stop). Past the deadline the
    /// tasks still answering are cancelled and given a second to end.
    func drain(within deadline: Duration) async {
        let shutdown = shutdownGracefully
        Task { await shutdown() }
        if await Self.wait(for: serving, atMost: deadline) { return }
        serving.cancel()
        _ = await Self.wait(for: serving, atMost: .seconds(1))
    }

    /// Whether `task` ended within `limit`.
    static func wait(for task: Task<Void, Never>, atMost limit: Duration) async -> Bool {
        let (outcome, sink) = AsyncStream<Bool>.makeStream()
        let waiter = Task {
            await task.value
            sink.yield(true)
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            sink.yield(false)
        }
        defer {
            waiter.cancel()
            timer.cancel()
        }
        for await ended in outcome { return ended }
        return false
    }
}

/// The server stopped before it was listening (it never does without an error).
struct ListenerStopped: Error, CustomStringConvertible {
    var description: String { "the server stopped before it was listening" }
}

/// What a netext-server HTTP role runs: binds a `--listen` address, serves, and shuts down
/// (`HTTPServer`, and servers built on it such as the PIR server).
public protocol RunnableHTTPServer: Sendable {
    /// Binds and starts serving; returns the bound port (useful with port 0).
    func start(_ address: ListenAddress) async throws -> Int
    /// Stops serving: drains open requests, then releases the server's threads.
    func shutdown() async
}
