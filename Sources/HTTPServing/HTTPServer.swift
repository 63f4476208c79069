import Dispatch
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small HTTP/1.1 server on SwiftNIO shared by netext-server's roles (PIR, issuer, Oblivious
/// HTTP gateway and relay). Requests are collected whole (up to the responder's limit, else
/// 413), answered by an `HTTPResponder` off the event loop, and logged as method, endpoint
/// label, status and duration only: no peer addresses, headers, queries or bodies.
public final class HTTPServer: Sendable {
    public let responder: any HTTPResponder
    let logger: Logger
    let group: MultiThreadedEventLoopGroup

    public init(responder: any HTTPResponder, logger: Logger, eventLoops: Int = 1) {
        self.responder = responder
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, eventLoops))
    }

    /// Binds and starts serving; returns the channel and the bound port (useful with port 0).
    public func start(host: String, port: Int) async throws -> (any Channel, Int) {
        let responder = self.responder, logger = self.logger
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
                    channel.pipeline.addHandler(HTTPServerChannelHandler(responder: responder, logger: logger))
                }
            }
            .bind(host: host, port: port).get()
        return (channel, channel.localAddress?.port ?? port)
    }

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
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var refused = false
    private var started: UInt64 = 0

    init(responder: any HTTPResponder, logger: Logger) {
        self.responder = responder
        self.logger = logger
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
            let path = Self.split(head.uri).path
            let limit = responder.bodyLimit(method: head.method.rawValue, path: path)
            if body.count + buffer.readableBytes > limit {
                refused = true
                let response = HTTPServerResponse.text(413, "request body of at least \(body.count + buffer.readableBytes) bytes exceeds the \(limit)-byte limit")
                write(response, context: context, head: head, close: true)
                return
            }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard !refused, let head else { return }
            let (path, query) = Self.split(head.uri)
            let request = HTTPServerRequest(
                method: head.method.rawValue, path: path, query: query,
                headers: head.headers.map { (name: $0.name, value: $0.value) }, body: body)
            body = []
            let responder = self.responder
            let eventLoop = context.eventLoop
            let bound = NIOLoopBound(context, eventLoop: eventLoop)
            let close = !head.isKeepAlive
            Task {
                let response = await responder.respond(to: request)
                eventLoop.execute { self.write(response, context: bound.value, head: head, close: close) }
            }
        }
    }

    static func split(_ uri: String) -> (path: String, query: String?) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, nil) }
        return (String(uri[..<mark]), String(uri[uri.index(after: mark)...]))
    }

    private func write(_ response: HTTPServerResponse, context: ChannelHandlerContext, head: HTTPRequestHead, close: Bool) {
        // Counted and logged before the bytes go out, so whoever reads the answer can rely on
        // the log line being there.
        let endpoint = responder.endpointLabel(path: Self.split(head.uri).path)
        let microseconds = Int((DispatchTime.now().uptimeNanoseconds - started) / 1000)
        responder.didRespond(endpoint: endpoint, status: response.status, microseconds: microseconds)
        logger.info("request", metadata: [
            "method": "\(head.method.rawValue)", "path": "\(endpoint)", "status": "\(response.status)", "ms": "\(microseconds / 1000)",
        ])
        var headers = HTTPHeaders()
        for (name, value) in response.headers where name.lowercased() != "content-length" { headers.add(name: name, value: value) }
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
        if close { headers.replaceOrAdd(name: "Connection", value: "close") }
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
