import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// One HTTP/1.1 request over a TCP socket the caller connected itself — bound to an interface,
/// marked to pass a traffic guard, which AsyncHTTPClient cannot do for its sockets. TLS for an
/// `https` URL (its host as SNI and checked against the certificate), `Connection: close`, the
/// answer collected up to `bodyLimit` bytes, everything within `timeout` seconds. The socket is
/// the exchange's from the call on: it is closed when the exchange ends, whatever happens.
public enum HTTPOverConnectedSocket {
    public static func exchange(
        descriptor: Int32, method: String = "GET", url: URL, headers: [(name: String, value: String)], tls: ClientTLS?,
        bodyLimit: Int, timeout: Double
    ) async throws(HTTPUpstream.Failure) -> HTTPServerResponse {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            close(descriptor)
            throw .unreachable("\(url.absoluteString) is not an http or https URL")
        }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let context: NIOSSLContext?
        if scheme == "https" {
            do { context = try NIOSSLContext(configuration: tls?.configuration ?? ClientTLS.configuration(trusting: .default)) } catch {
                close(descriptor)
                throw .unreachable("\(host): TLS: \(TLSFailure.describe(error))")
            }
        } else {
            context = nil
        }
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.next().makePromise(of: HTTPServerResponse.self)
        let collector = ResponseCollector(promise: promise, bodyLimit: bodyLimit)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let context {
                            // An IP address is no server name (RFC 6066 §3): none is sent then.
                            let serverName = host.allSatisfy({ $0.isNumber || $0 == "." }) || host.contains(":") ? nil : host
                            try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: serverName))
                        }
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(collector)
                    }
                }
                .withConnectedSocket(descriptor).get()
        } catch {
            close(descriptor)
            throw HTTPUpstream.failure(error, host: host, port: port, timeout: timeout)
        }
        let deadline = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1000))) {
            promise.fail(HTTPUpstream.Failure.timedOut(seconds: Int(timeout)))
            channel.close(promise: nil)
        }
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: Self.target(of: url))
        head.headers.add(name: "Host", value: url.port.map { "\(host):\($0)" } ?? host)
        for (name, value) in headers where !["host", "connection", "content-length", "transfer-encoding"].contains(name.lowercased()) {
            head.headers.add(name: name, value: value)
        }
        head.headers.add(name: "Connection", value: "close")
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        defer {
            deadline.cancel()
            channel.close(promise: nil)
        }
        do {
            return try await promise.futureResult.get()
        } catch let failure as HTTPUpstream.Failure {
            throw failure
        } catch {
            throw HTTPUpstream.failure(error, host: host, port: port, timeout: timeout)
        }
    }

    /// The request target: the path (at least "/") and the query.
    static func target(of url: URL) -> String {
        let path = url.path.isEmpty ? "/" : url.path
        return url.query.map { path + "?" + $0 } ?? path
    }

    /// Collects one response; the answer is complete at its end, or when the server closes a
    /// response without a length.
    private final class ResponseCollector: ChannelInboundHandler, @unchecked Sendable {
        // @unchecked: touched only on the channel's event loop.
        typealias InboundIn = HTTPClientResponsePart
        private let promise: EventLoopPromise<HTTPServerResponse>
        private let bodyLimit: Int
        private var response: HTTPServerResponse?

        init(promise: EventLoopPromise<HTTPServerResponse>, bodyLimit: Int) {
            self.promise = promise
            self.bodyLimit = bodyLimit
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                response = HTTPServerResponse(status: Int(head.status.code), headers: head.headers.map { (name: $0.name, value: $0.value) })
            case .body(let buffer):
                guard response != nil else { return }
                guard response!.body.count + buffer.readableBytes <= bodyLimit else {
                    promise.fail(HTTPUpstream.Failure.unreachable("the answer is larger than \(bodyLimit) bytes"))
                    context.close(promise: nil)
                    return
                }
                response!.body += buffer.readableBytesView
            case .end:
                if let response { promise.succeed(response) }
                context.close(promise: nil)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            promise.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(HTTPUpstream.Failure.unreachable("the server closed the connection before its whole answer arrived"))
            context.fireChannelInactive()
        }
    }
}
