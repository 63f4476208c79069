import Dispatch
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The PIR service over HTTP/1.1 (SwiftNIO): `POST /config`, `POST /key`, `POST /queries`
/// (protobuf bodies), `GET /metrics` (Prometheus text). Query processing runs off the event
/// loop; bodies beyond each endpoint's limit are refused with 413; errors are 4xx with a
/// one-line reason. Logs carry method, path, status and duration — never bodies or users.
public final class PIRHTTPServer: Sendable {
    public let handler: PIRRequestHandler
    let logger: Logger
    let group: MultiThreadedEventLoopGroup
    /// Queries run here, not on the event loop.
    let workQueue = DispatchQueue(label: "netext.pir.work", attributes: .concurrent)

    public init(handler: PIRRequestHandler, logger: Logger) {
        self.handler = handler
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    }

    /// Binds and starts serving; returns the bound port (useful with port 0).
    public func start(host: String, port: Int) async throws -> (any Channel, Int) {
        let handler = self.handler, logger = self.logger, queue = workQueue
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
                    channel.pipeline.addHandler(PIRHTTPChannelHandler(service: handler, logger: logger, queue: queue))
                }
            }
            .bind(host: host, port: port).get()
        return (channel, channel.localAddress?.port ?? port)
    }

    public func shutdown() async {
        try? await group.shutdownGracefully()
    }
}

final class PIRHTTPChannelHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let service: PIRRequestHandler
    let logger: Logger
    let queue: DispatchQueue
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var refused = false
    private var started: UInt64 = 0

    init(service: PIRRequestHandler, logger: Logger, queue: DispatchQueue) {
        self.service = service
        self.logger = logger
        self.queue = queue
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(head):
            self.head = head
            body = []
            refused = false
            started = DispatchTime.now().uptimeNanoseconds
        case var .body(buffer):
            guard !refused, let head else { return }
            let limit = PIRRequestHandler.limits[head.uri] ?? 0
            if body.count + buffer.readableBytes > limit {
                refused = true
                let error = PIRServiceError.requestTooLarge(bytes: body.count + buffer.readableBytes, limit: limit)
                respond(context: context, status: error.httpStatus, body: Array((error.description + "\n").utf8), contentType: "text/plain", close: true)
                return
            }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard !refused, let head else { return }
            route(context: context, head: head, body: body)
            body = []
        }
    }

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead, body: [UInt8]) {
        let path = head.uri.split(separator: "?").first.map(String.init) ?? head.uri
        let user = head.headers.first(name: "User-Identifier")
        if path == "/metrics", head.method == .GET {
            let text = service.metrics.render(keys: service.keys.count, useCases: service.useCaseNames.count)
            respond(context: context, status: 200, body: Array(text.utf8), contentType: "text/plain; version=0.0.4", close: !head.isKeepAlive)
            return
        }
        guard ["/config", "/key", "/queries"].contains(path) else {
            respond(context: context, status: 404, body: Array("no such endpoint \(path)\n".utf8), contentType: "text/plain", close: !head.isKeepAlive)
            return
        }
        guard head.method == .POST else {
            respond(context: context, status: 405, body: Array("\(path) takes POST\n".utf8), contentType: "text/plain", close: !head.isKeepAlive)
            return
        }
        let service = self.service
        let eventLoop = context.eventLoop
        let bound = NIOLoopBound(context, eventLoop: eventLoop)
        let keepAlive = head.isKeepAlive
        queue.async {
            let result: Result<[UInt8], PIRServiceError>
            do throws(PIRServiceError) {
                switch path {
                case "/config": result = .success(try service.handleConfig(body: body, user: user))
                case "/key": try service.handleKey(body: body, user: user); result = .success([])
                default: result = .success(try service.handleQueries(body: body, user: user))
                }
            } catch {
                result = .failure(error)
            }
            eventLoop.execute {
                switch result {
                case let .success(bytes):
                    self.respond(context: bound.value, status: 200, body: bytes, contentType: "application/x-protobuf", close: !keepAlive, endpoint: path)
                case let .failure(error):
                    self.respond(context: bound.value, status: error.httpStatus, body: Array((error.description + "\n").utf8), contentType: "text/plain", close: !keepAlive, endpoint: path)
                }
            }
        }
    }

    private func respond(context: ChannelHandlerContext, status: Int, body: [UInt8], contentType: String, close: Bool, endpoint: String? = nil) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: String(body.count))
        if close { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: body.count)
        buffer.writeBytes(body)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if close {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
        let path = endpoint ?? self.head?.uri ?? "?"
        let known = ["/config", "/key", "/queries", "/metrics"]
        service.metrics.countRequest(endpoint: known.contains(path) ? path : "other", status: status)
        let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
        logger.info("request", metadata: [
            "method": "\(self.head?.method.rawValue ?? "?")", "path": "\(known.contains(path) ? path : "other")", "status": "\(status)",
            "ms": "\(Int(milliseconds))",
        ])
    }
}
