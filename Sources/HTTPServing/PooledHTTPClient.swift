import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A small HTTP/1.1 client on SwiftNIO for the hops between NetExt's parts (client → relay,
/// relay → gateway, gateway → target, origin → issuer): keep-alive connections pooled per
/// scheme, host and port, one request at a time per connection, whole bodies; HTTPS through
/// NIOSSL with the trust given at init (`ClientTLS`). URLSession on Linux costs about a
/// millisecond per request; this costs a few tens of microseconds.
public final class PooledHTTPClient: Sendable {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
    }

    public enum Failure: Error, Sendable, Equatable {
        case connect(String)
        /// The TLS handshake failed (a sentence: untrusted certificate, wrong name, not TLS…).
        case tls(String)
        /// The connection closed before any of the response arrived (a pooled connection the
        /// server had closed): safe to send again on a new one.
        case closedBeforeResponse
        /// The connection was already closed when the request was to go out (the server ended
        /// it first: an idle pooled connection, or a fresh one that waited past the server's
        /// request deadline before this client got to use it): nothing was sent.
        case notSent
        case closedEarly
        case timedOut
        case tooLarge
    }

    struct Connection: @unchecked Sendable {
        let channel: any Channel
        let collector: ResponseCollector
    }

    let group: any EventLoopGroup
    let timeout: TimeAmount
    let maximumIdlePerHost: Int
    /// Whom HTTPS connections trust; nil: `ClientTLS.system()`, set up at the first HTTPS request.
    private let trust: Mutex<ClientTLS?>
    private let idle = Mutex([String: [Connection]]())

    public init(timeout: Double = 30, maximumIdlePerHost: Int = 16, tls: ClientTLS? = nil) {
        group = MultiThreadedEventLoopGroup.singleton
        self.timeout = .milliseconds(Int64(timeout * 1000))
        self.maximumIdlePerHost = maximumIdlePerHost
        trust = Mutex(tls)
    }

    /// The TLS of HTTPS connections: the one given at init, else the system's trust store.
    private func clientTLS() throws(Failure) -> ClientTLS {
        if let given = trust.withLock({ $0 }) { return given }
        do throws(TLSSetupError) {
            let system = try ClientTLS.system()
            trust.withLock { $0 = $0 ?? system }
            return system
        } catch { throw .tls(error.description) }
    }

    deinit {
        for connection in idle.withLock({ $0.values.flatMap { $0 } }) { connection.channel.close(promise: nil) }
    }

    /// One request as it goes out.
    struct Request: Sendable {
        var method: String
        var secure: Bool
        var host: String
        var port: Int
        var target: String
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        /// The Host field's value: the port only when it is not the scheme's default.
        var authority: String { port == (secure ? 443 : 80) ? host : "\(host):\(port)" }
        /// The pool's key: scheme, host and port.
        var key: String { "\(secure ? "https" : "http")://\(host):\(port)" }
    }

    /// Sends one request to `host:port` (over TLS when `secure`); `target` is the path with its
    /// query.
    public func send(
        method: String, secure: Bool = false, host: String, port: Int, target: String, headers: [(name: String, value: String)], body: [UInt8]
    ) async throws(Failure) -> Response {
        let request = Request(method: method, secure: secure, host: host, port: port, target: target, headers: headers, body: body)
        // A pooled connection the server closed meanwhile fails before any answer: send again
        // on a fresh one.
        while let pooled = idle.withLock({ $0[request.key]?.popLast() }) {
            guard pooled.channel.isActive else { continue }
            do { return try await exchange(request, on: pooled) } catch {
                guard error == .closedBeforeResponse || error == .notSent else { throw error }
                break
            }
        }
        // A fresh connection carries the request from its connect callback, on its event loop:
        // a task resumed late (a starved task pool) cannot leave it idle past the server's
        // request deadline.
        // (With TLS, the request waits in the TLS handler until the handshake is done.)
        let collector = ResponseCollector()
        let connected = try bootstrap(collector, secure: secure, host: host).connect(host: host, port: port)
        let answered = connected.flatMap { channel in self.write(request, on: Connection(channel: channel, collector: collector)) }
        let channel: any Channel
        do { channel = try await connected.get() } catch { throw .connect("\(host):\(port): \(ConnectFailureText.reason(error))") }
        return try await finish(request, on: Connection(channel: channel, collector: collector), answered)
    }

    private func bootstrap(_ collector: ResponseCollector, secure: Bool, host: String) throws(Failure) -> ClientBootstrap {
        let tls = secure ? try clientTLS() : nil
        return ClientBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                // The initializer runs on the channel's event loop.
                if let tls {
                    do { try channel.pipeline.syncOperations.addHandler(try tls.handler(host: host)) } catch {
                        return channel.eventLoop.makeFailedFuture(Failure.tls("\(host) is not a name TLS can check: \(TLSFailure.describe(error))"))
                    }
                }
                return channel.pipeline.addHTTPClientHandlers().flatMap { channel.pipeline.addHandler(collector) }
            }
    }

    /// A connection and nothing sent on it yet (tests use it to hold one idle).
    func connect(secure: Bool = false, host: String, port: Int) async throws(Failure) -> Connection {
        let collector = ResponseCollector()
        do {
            let channel = try await bootstrap(collector, secure: secure, host: host).connect(host: host, port: port).get()
            return Connection(channel: channel, collector: collector)
        } catch { throw .connect("\(host):\(port): \(ConnectFailureText.reason(error))") }
    }

    /// Sends `request` on a connection already open and waits for its answer.
    func exchange(_ request: Request, on connection: Connection) async throws(Failure) -> Response {
        try await finish(request, on: connection, write(request, on: connection))
    }

    /// Writes the request on the connection's event loop; the future is its answer.
    private func write(_ request: Request, on connection: Connection) -> EventLoopFuture<ResponseCollector.Result> {
        let channel = connection.channel, collector = connection.collector, timeout = self.timeout
        let promise = channel.eventLoop.makePromise(of: ResponseCollector.Result.self)
        channel.eventLoop.execute {
            // Checked on the channel's loop: when it is still active here, its close comes
            // after `begin` and fails the promise; when it is not, no answer can ever come, and
            // waiting for one would take the whole timeout.
            guard channel.isActive else {
                // A TLS handshake can fail before the request was to go out: say why.
                promise.fail(collector.tlsFailure ?? Failure.notSent)
                return
            }
            var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method), uri: request.target)
            head.headers.add(name: "Host", value: request.authority)
            for (name, value) in request.headers where name.lowercased() != "host" && name.lowercased() != "content-length" {
                head.headers.add(name: name, value: value)
            }
            if !request.body.isEmpty || request.method == "POST" || request.method == "PUT" {
                head.headers.add(name: "Content-Length", value: String(request.body.count))
            }
            collector.begin(promise, timeout: timeout, context: channel)
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            if !request.body.isEmpty {
                var buffer = channel.allocator.buffer(capacity: request.body.count)
                buffer.writeBytes(request.body)
                channel.write(HTTPClientRequestPart.body(.byteBuffer(buffer)), promise: nil)
            }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        return promise.futureResult
    }

    /// Waits for the answer, then keeps the connection for the next request or closes it.
    private func finish(_ request: Request, on connection: Connection, _ answer: EventLoopFuture<ResponseCollector.Result>) async throws(Failure) -> Response {
        let channel = connection.channel
        let result: ResponseCollector.Result
        do { result = try await answer.get() } catch let failure as Failure {
            channel.close(promise: nil)
            throw failure
        } catch {
            channel.close(promise: nil)
            throw .closedEarly
        }
        if result.keepAlive, channel.isActive {
            let kept = idle.withLock { pool -> Bool in
                guard pool[request.key, default: []].count < maximumIdlePerHost else { return false }
                pool[request.key, default: []].append(connection)
                return true
            }
            if !kept { channel.close(promise: nil) }
        } else {
            channel.close(promise: nil)
        }
        return Response(status: result.status, headers: result.headers, body: result.body)
    }
}

/// Collects the response to the request in flight on one connection (event-loop confined).
final class ResponseCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart

    struct Result: Sendable {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        var keepAlive: Bool
    }

    static let maximumBody = 32 << 20
    private var promise: EventLoopPromise<Result>?
    private var result: Result?
    private var timer: Scheduled<Void>?
    /// Why the TLS handshake failed, kept for a request that was not yet under way then.
    private(set) var tlsFailure: PooledHTTPClient.Failure?

    func begin(_ promise: EventLoopPromise<Result>, timeout: TimeAmount, context channel: any Channel) {
        self.promise = promise
        result = nil
        timer = channel.eventLoop.scheduleTask(in: timeout) { [weak self] in
            self?.fail(PooledHTTPClient.Failure.timedOut)
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(head):
            result = Result(status: Int(head.status.code), headers: head.headers.map { ($0.name, $0.value) }, body: [], keepAlive: head.isKeepAlive)
        case var .body(buffer):
            guard result != nil else { return }
            if (result?.body.count ?? 0) + buffer.readableBytes > Self.maximumBody {
                fail(PooledHTTPClient.Failure.tooLarge)
                context.close(promise: nil)
                return
            }
            result?.body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            timer?.cancel()
            if let result, let promise {
                self.promise = nil
                promise.succeed(result)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(result == nil ? PooledHTTPClient.Failure.closedBeforeResponse : PooledHTTPClient.Failure.closedEarly)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            let failure = PooledHTTPClient.Failure.tls(TLSFailure.describe(error))
            tlsFailure = failure
            fail(failure)
        } else {
            fail(result == nil ? .closedBeforeResponse : .closedEarly)
        }
        context.close(promise: nil)
    }

    private func fail(_ error: PooledHTTPClient.Failure) {
        timer?.cancel()
        if let promise {
            self.promise = nil
            promise.fail(error)
        }
    }
}
