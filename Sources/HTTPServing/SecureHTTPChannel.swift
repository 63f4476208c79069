import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOSSL
import NIOTLS

/// What a TLS connection of the server runs: the handshake, then by ALPN (RFC 7301; RFC 9113
/// §3.2) HTTP/2 when the client offers `h2`, else HTTP/1.1 through Hummingbird's channel.
///
/// HTTP/2 is NetExt's own layer over swift-nio-http2 rather than Hummingbird's: each stream's
/// request is collected by an `HTTP2StreamExchange` in the stream's channel and answered with
/// one hop to the task pool and back, where Hummingbird's runs a task and an async channel per
/// stream. The exchange's rules are the same either way (`HTTPExchange`: admission on the head,
/// limits, metrics, the connection limiter's deadline); this is what brought a PIR query over
/// HTTPS/2 within 5 % of plain HTTP/1.1 (BENCHMARKS.md, "URL filter II").
struct SecureHTTPChannel: ServerChildChannel {
    enum Negotiated: Sendable {
        case http1(HTTP1Channel.Value)
        /// The HTTP/2 pipeline is in place; the connection is served by its handlers.
        case http2
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let context: NIOSSLContext
    let http1: HTTP1Channel
    let exchange: HTTPExchange

    /// `configuration` offers `h2` and `http/1.1` in ALPN (`ServerTLS`).
    init(tls: ServerTLS, http1: HTTP1Channel, exchange: HTTPExchange) throws {
        context = try NIOSSLContext(configuration: tls.configuration)
        self.http1 = http1
        self.exchange = exchange
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let http1 = self.http1
        let exchange = self.exchange
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result, channel in
                switch result {
                case .negotiated("h2"):
                    return channel.eventLoop.makeCompletedFuture {
                        try Self.configureHTTP2(channel, exchange: exchange)
                        return .http2
                    }
                case .negotiated("http/1.1"), .fallback:
                    return http1.setup(channel: channel, logger: logger).map { .http1($0) }
                case .negotiated:
                    // Not offered by the server: a client that picks it anyway is talking nonsense.
                    return channel.close().flatMapThrowing { throw NIOHTTP2Errors.invalidALPNToken() }
                }
            }
            try channel.pipeline.syncOperations.addHandler(negotiation)
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1(let connection):
                await http1.handle(value: connection, logger: logger)
            case .http2:
                // The handlers serve it; this task only keeps the connection counted by the
                // server until it closes (or closes it when the server gives up draining).
                let channel = value.channel
                try await withTaskCancellationHandler {
                    try await channel.closeFuture.get()
                } onCancel: {
                    channel.close(promise: nil)
                }
            }
        } catch {
            logger.debug("TLS connection ended: \(error)")
        }
    }

    /// The HTTP/2 handler (swift-nio-http2's defaults: 100 concurrent streams, 16 KiB of
    /// header list), a `HTTP2StreamExchange` in each stream's channel, and the drain.
    static func configureHTTP2(_ channel: any Channel, exchange: HTTPExchange) throws {
        let drain = HTTP2ConnectionDrain()
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init(), streamDelegate: drain.delegate(on: channel.eventLoop)
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(HTTP2StreamExchange(exchange: exchange))
            }
        }
        try channel.pipeline.syncOperations.addHandler(drain)
    }
}
