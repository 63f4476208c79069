import HTTPFetching
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// A relay connection that negotiated HTTP/1.1 (or no ALPN): one classic CONNECT tunnel for TCP
/// (RFC 9110 §9.3.6), for clients that speak no HTTP/2 to a proxy — curl's `--proxy https://…`,
/// browsers' HTTPS proxies. The request head must arrive within the handshake deadline; it is
/// checked as an HTTP/2 stream's is (credential, target, allowed destinations), then the target
/// is connected, `200 Connection Established` sent, and the HTTP handlers give way to a
/// `RelayGlue` pair that carries the bytes both ways (bytes that came after the head included).
/// Anything else — another method, `Upgrade: connect-udp` (connect-udp and connect-ip are
/// served over HTTP/2) — is answered with the status and the connection closed.
final class RelayHTTP1ConnectHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private enum State {
        case awaitingHead
        case connecting
        case done
    }

    private let policy: RelayPolicy
    private let admission: RelayConnectionAdmission
    private let counters: RelayCounters
    private let logger: Logger
    private let headDeadline: Double
    private let decoder: ByteToMessageHandler<HTTPRequestDecoder>
    private var state = State.awaitingHead
    private var timer: Scheduled<Void>?

    init(
        policy: RelayPolicy, admission: RelayConnectionAdmission, counters: RelayCounters, logger: Logger, headDeadline: Double,
        decoder: ByteToMessageHandler<HTTPRequestDecoder>
    ) {
        self.policy = policy
        self.admission = admission
        self.counters = counters
        self.logger = logger
        self.headDeadline = headDeadline
        self.decoder = decoder
    }

    /// The decoder this handler expects before it (bytes after a CONNECT's head are handed on).
    static func decoder() -> ByteToMessageHandler<HTTPRequestDecoder> {
        ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(headDeadline * 1000))) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data), case .awaitingHead = state else { return }
        timer?.cancel()
        state = .connecting
        guard head.method == .CONNECT else {
            counters.count(\.malformed)
            let upgrade = head.headers["upgrade"].first?.lowercased()
            if let upgrade, upgrade.contains("connect-udp") || upgrade.contains("connect-ip") {
                return refuse(501, "over HTTP/1.1 the relay carries CONNECT only; connect-udp and connect-ip are served over HTTP/2", context: context)
            }
            return refuse(405, "the relay answers CONNECT only, not \(head.method.rawValue)", context: context)
        }
        let credential = head.headers["proxy-authorization"].first ?? head.headers["authorization"].first
        switch RelayAuthorization.decide(credential, policy: policy, admission: admission) {
        case .admitted:
            connect(head.uri, context: context)
        case .refused(let reason, let challenges):
            counters.count(\.unauthorized)
            refuse(407, reason, extra: challenges.map { ("Proxy-Authenticate", $0) }, context: context)
        case .redeem(let verifier, let credential):
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            let authority = head.uri
            RelayAuthorization.redeem(
                credential, with: verifier, policy: policy, admission: admission, counters: counters, on: context.eventLoop
            ) { [self] refusal in
                let context = loopBound.value
                guard case .connecting = state else { return }
                if let (status, reason, challenges) = refusal {
                    return refuse(status, reason, extra: challenges.map { ("Proxy-Authenticate", $0) }, context: context)
                }
                connect(authority, context: context)
            }
        }
    }

    private func connect(_ authority: String, context: ChannelHandlerContext) {
        guard let (host, port) = RelayRequest.hostAndPort(authority) else {
            counters.count(\.malformed)
            return refuse(400, "a CONNECT needs host:port as its target (RFC 9110 §9.3.6)", context: context)
        }
        RelayTargetLookup.address(of: host, port: port, policy: policy, on: context.eventLoop).whenSuccess { [self] found in
            guard case .connecting = state, context.channel.isActive else { return }
            switch found {
            case .failure(let refusal):
                counters.count(refusal.counted)
                refuse(refusal.status, refusal.reason, proxyStatus: refusal.proxyStatus, target: refusal.detail, context: context)
            case .success(let target):
                let (clientSide, targetSide) = RelayGlue.pair()
                ClientBootstrap(group: context.eventLoop)
                    .connectTimeout(.seconds(10))
                    // Not read before the client's side is glued (a target that speaks first).
                    .channelOption(ChannelOptions.autoRead, value: false)
                    .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(targetSide) } }
                    .connect(to: target)
                    .whenComplete { [self] result in
                        switch result {
                        case .failure(let error):
                            counters.count(\.failed)
                            refuse(502, "could not reach the target: \(ConnectFailureText.reason(error))", proxyStatus: "connection_refused", target: "\(host):\(port)", context: context)
                        case .success(let targetChannel):
                            guard case .connecting = state, context.channel.isActive else {
                                targetChannel.close(promise: nil)
                                return
                            }
                            tunnel(clientSide, context: context)
                            _ = targetChannel.setOption(ChannelOptions.autoRead, value: true)
                        }
                    }
            }
        }
    }

    /// 200, then the glue in this handler's place and the decoder's (which hands on what it holds).
    private func tunnel(_ glue: RelayGlue, context: ChannelHandlerContext) {
        state = .done
        counters.count(\.tcpStreams)
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 Connection Established\r\n\r\n")), promise: nil)
        let pipeline = context.pipeline
        do {
            try pipeline.syncOperations.addHandler(glue, position: .after(self))
        } catch {
            context.close(promise: nil)
            return
        }
        let decoder = decoder
        pipeline.syncOperations.removeHandler(self).whenSuccess { _ in
            pipeline.syncOperations.removeHandler(decoder, promise: nil)
        }
    }

    /// Answers `status` and closes the connection. The log names no target unless at debug.
    private func refuse(
        _ status: Int, _ reason: String, proxyStatus: String? = nil, target: String? = nil, extra: [(String, String)] = [], context: ChannelHandlerContext
    ) {
        state = .done
        logger.info("relay: HTTP/1.1 request refused", metadata: ["status": "\(status)", "reason": "\(reason)"])
        if let target { logger.debug("relay: refused target", metadata: ["status": "\(status)", "target": "\(target)"]) }
        var head = "HTTP/1.1 \(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\r\n"
        if let proxyStatus { head += "Proxy-Status: netext-relay; error=\(proxyStatus)\r\n" }
        for (name, value) in extra { head += "\(name): \(value)\r\n" }
        let body = reason + "\n"
        head += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: head))).whenComplete { _ in channel.close(promise: nil) }
    }
}
