import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A small HTTP/1.1 client on SwiftNIO for plain-HTTP hops between NetExt's parts (client →
/// relay, relay → gateway, gateway → target): keep-alive connections pooled per host and port,
/// one request at a time per connection, whole bodies. URLSession on Linux costs about a
/// millisecond per request; this costs a few tens of microseconds. HTTPS is not handled here
/// (callers fall back to URLSession for it).
public final class PooledHTTPClient: Sendable {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
    }

    public enum Failure: Error, Sendable, Equatable {
        case connect(String)
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
    private let idle = Mutex([String: [Connection]]())

    public init(timeout: Double = 30, maximumIdlePerHost: Int = 16) {
        group = MultiThreadedEventLoopGroup.singleton
        self.timeout = .milliseconds(Int64(timeout * 1000))
        self.maximumIdlePerHost = maximumIdlePerHost
    }

    deinit {
        for connection in idle.withLock({ $0.values.flatMap { $0 } }) { connection.channel.close(promise: nil) }
    }

    /// Sends one request to `host:port`; `target` is the path with its query.
    public func send(
        method: String, host: String, port: Int, target: String, headers: [(name: String, value: String)], body: [UInt8]
    ) async throws(Failure) -> Response {
        let key = "\(host):\(port)"
        // A pooled connection the server closed meanwhile fails before any answer: send again
        // on a fresh one.
        while let pooled = idle.withLock({ $0[key]?.popLast() }) {
            guard pooled.channel.isActive else { continue }
            do { return try await exchange(on: pooled, key: key, method: method, host: host, port: port, target: target, headers: headers, body: body) } catch {
                guard error == .closedBeforeResponse || error == .notSent else { throw error }
                break
            }
        }
        // A fresh connection can be closed by the server before this task gets to use it (a
        // starved task pool resumes it after the server's request deadline): one more try.
        for attempt in 1...2 {
            let fresh = try await connect(host: host, port: port)
            do { return try await exchange(on: fresh, key: key, method: method, host: host, port: port, target: target, headers: headers, body: body) } catch {
                guard error == .notSent, attempt < 2 else { throw error }
            }
        }
        throw .notSent
    }

    func connect(host: String, port: Int) async throws(Failure) -> Connection {
        let collector = ResponseCollector()
        do {
            let channel = try await ClientBootstrap(group: group)
                .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.pipeline.addHTTPClientHandlers().flatMap { channel.pipeline.addHandler(collector) }
                }
                .connect(host: host, port: port).get()
            return Connection(channel: channel, collector: collector)
        } catch { throw .connect("\(host):\(port): \(error)") }
    }

    func exchange(
        on connection: Connection, key: String, method: String, host: String, port: Int, target: String,
        headers: [(name: String, value: String)], body: [UInt8]
    ) async throws(Failure) -> Response {
        let channel = connection.channel, collector = connection.collector, timeout = self.timeout
        let promise = channel.eventLoop.makePromise(of: ResponseCollector.Result.self)
        channel.eventLoop.execute {
            // Checked on the channel's loop: when it is still active here, its close comes
            // after `begin` and fails the promise; when it is not, no answer can ever come, and
            // waiting for one would take the whole timeout.
            guard channel.isActive else {
                promise.fail(Failure.notSent)
                return
            }
            var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: target)
            head.headers.add(name: "Host", value: port == 80 ? host : "\(host):\(port)")
            for (name, value) in headers where name.lowercased() != "host" && name.lowercased() != "content-length" {
                head.headers.add(name: name, value: value)
            }
            if !body.isEmpty || method == "POST" || method == "PUT" { head.headers.add(name: "Content-Length", value: String(body.count)) }
            collector.begin(promise, timeout: timeout, context: channel)
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            if !body.isEmpty {
                var buffer = channel.allocator.buffer(capacity: body.count)
                buffer.writeBytes(body)
                channel.write(HTTPClientRequestPart.body(.byteBuffer(buffer)), promise: nil)
            }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        let result: ResponseCollector.Result
        do { result = try await promise.futureResult.get() } catch let failure as Failure {
            channel.close(promise: nil)
            throw failure
        } catch {
            channel.close(promise: nil)
            throw .closedEarly
        }
        if result.keepAlive, channel.isActive {
            let kept = idle.withLock { pool -> Bool in
                guard pool[key, default: []].count < maximumIdlePerHost else { return false }
                pool[key, default: []].append(connection)
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
        fail(result == nil ? PooledHTTPClient.Failure.closedBeforeResponse : PooledHTTPClient.Failure.closedEarly)
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
