import HTTPCapsules
import HTTPFetching
import Logging
import NetExtCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix

/// One HTTP/2 stream of the relay, in the stream's channel: reads the request head, checks
/// credentials and the target against the policy, connects (TCP) or opens a connected UDP
/// socket (connect-udp), answers 200, then carries the stream's DATA to the target and the
/// target's bytes back as DATA — raw for a TCP tunnel, DATAGRAM capsules (context ID 0) for
/// UDP. Flow control is passed through both ways: the target is read only while the stream can
/// take more, and the stream only while the target can.
final class RelayStreamHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private enum State {
        case awaitingHead
        /// Resolving or connecting; DATA that arrives meanwhile waits in `pending`.
        case connecting
        case tunnel(any Channel, isUDP: Bool)
        /// A connect-ip tunnel: packets through the router.
        case ipTunnel(ConnectIPStream)
        case closed
    }

    private let policy: RelayPolicy
    private let admission: RelayConnectionAdmission
    private let ipRouter: ConnectIPRouter?
    private let counters: RelayCounters
    private let logger: Logger
    private var state = State.awaitingHead
    private var pending: [ByteBuffer] = []
    private var pendingEnd = false
    private var capsules = CapsuleParser()

    /// The largest UDP payload (65,535 less the IPv6 and UDP headers' 48 bytes is the IPv6 bound).
    static let maximumUDPPayload = 65_527

    init(policy: RelayPolicy, admission: RelayConnectionAdmission, ipRouter: ConnectIPRouter?, counters: RelayCounters, logger: Logger) {
        self.policy = policy
        self.admission = admission
        self.ipRouter = ipRouter
        self.counters = counters
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let headers):
            guard case .awaitingHead = state else { return }
            head(headers.headers, endStream: headers.endStream, context: context)
        case .data(let data):
            guard case .byteBuffer(let bytes) = data.data else { return }
            body(bytes, endStream: data.endStream, context: context)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .tunnel(let target, _) = state { target.close(promise: nil) }
        if case .ipTunnel(let tunnel) = state { tunnel.close() }
        state = .closed
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The stream's window opened or closed: read the target accordingly.
        if case .tunnel(let target, _) = state { _ = target.setOption(ChannelOptions.autoRead, value: context.channel.isWritable) }
        context.fireChannelWritabilityChanged()
    }

    private func head(_ headers: HPACKHeaders, endStream: Bool, context: ChannelHandlerContext) {
        let credential = headers.first(name: "proxy-authorization") ?? headers.first(name: "authorization")
        switch RelayAuthorization.decide(credential, policy: policy, admission: admission) {
        case .admitted:
            authorized(headers, endStream: endStream, context: context)
        case .refused(let reason, let challenges):
            counters.count(\.unauthorized)
            refuse(407, reason, extra: challenges.map { ("proxy-authenticate", $0) }, context: context)
        case .redeem(let verifier, let credential):
            // DATA that arrives while the token is redeemed waits in `pending`.
            state = .connecting
            pendingEnd = endStream
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            RelayAuthorization.redeem(
                credential, with: verifier, policy: policy, admission: admission, counters: counters, on: context.eventLoop
            ) { [self] refusal in
                let context = loopBound.value
                guard case .connecting = state else { return }  // the stream went meanwhile
                if let (status, reason, challenges) = refusal {
                    return refuse(status, reason, extra: challenges.map { ("proxy-authenticate", $0) }, context: context)
                }
                authorized(headers, endStream: pendingEnd, context: context)
            }
        }
    }

    /// The request of a stream its credential admitted: read, then connected, opened or refused.
    private func authorized(_ headers: HPACKHeaders, endStream: Bool, context: ChannelHandlerContext) {
        let request: RelayRequest
        do { request = try RelayRequest(headers) } catch {
            counters.count(\.malformed)
            refuse(error.status, error.reason, target: error.detail, context: context)
            return
        }
        let host: String, port: UInt16
        switch request {
        case .tcp(let name, let number): (host, port) = (name, number)
        case .udp(let target): (host, port) = (target.host, target.port)
        case .ip(let scope): return openIP(scope, endStream: endStream, context: context)
        }
        state = .connecting
        pendingEnd = endStream
        let isUDP: Bool = if case .udp = request { true } else { false }
        RelayTargetLookup.address(of: host, port: port, policy: policy, on: context.eventLoop).whenSuccess { [self] found in
            guard case .connecting = state else { return }
            switch found {
            case .success(let target): open(target, isUDP: isUDP, name: host, port: port, context: context)
            case .failure(let refusal):
                counters.count(refusal.counted)
                refuse(refusal.status, refusal.reason, proxyStatus: refusal.proxyStatus, target: refusal.detail, context: context)
            }
        }
    }

    private func open(_ target: SocketAddress, isUDP: Bool, name: String, port: UInt16, context: ChannelHandlerContext) {
        let stream = context.channel
        let opened: EventLoopFuture<any Channel>
        if isUDP {
            let forward = TargetToStream<AddressedEnvelope<ByteBuffer>>(stream: stream) { envelope in
                ByteBuffer(bytes: ProxiedDatagram(payload: Array(envelope.data.readableBytesView)).capsule.encoded)
            }
            opened = DatagramBootstrap(group: context.eventLoop)
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(forward) } }
                .bind(host: target.protocol == .inet ? "0.0.0.0" : "::", port: 0)
                .flatMap { channel in channel.connect(to: target).map { channel } }
        } else {
            let forward = TargetToStream<ByteBuffer>(stream: stream) { $0 }
            opened = ClientBootstrap(group: context.eventLoop)
                .connectTimeout(.seconds(10))
                .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(forward) } }
                .connect(to: target)
        }
        opened.whenComplete { [self] result in
            switch result {
            case .failure(let error):
                counters.count(\.failed)
                refuse(502, "could not reach the target: \(ConnectFailureText.reason(error))", proxyStatus: "connection_refused", target: "\(name):\(port)", context: context)
            case .success(let channel):
                guard case .connecting = state else {
                    channel.close(promise: nil)
                    return
                }
                state = .tunnel(channel, isUDP: isUDP)
                // The target may have been read (and its reading stopped by a full stream) before
                // this; from here on the stream's window changes are heard.
                _ = channel.setOption(ChannelOptions.autoRead, value: context.channel.isWritable)
                counters.count(isUDP ? \.udpStreams : \.tcpStreams)
                var headers: HPACKHeaders = [":status": "200"]
                if isUDP { headers.add(name: "capsule-protocol", value: "?1") }
                context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
                let waiting = pending
                pending = []
                for bytes in waiting { deliver(bytes, to: channel, isUDP: isUDP, context: context) }
                if pendingEnd { end(channel, isUDP: isUDP, context: context) }
            }
        }
    }

    /// connect-ip: a lease and the routes, then 200 and the opening capsules at once (nothing to
    /// connect to: the router is the way out).
    private func openIP(_ scope: ConnectIPScope, endStream: Bool, context: ChannelHandlerContext) {
        guard let ipRouter else {
            counters.count(\.malformed)
            return refuse(501, "the relay has no connect-ip address pool (netext-server relay --ip-pool)", context: context)
        }
        if case .name = scope.target {
            counters.count(\.malformed)
            return refuse(501, "the relay does not scope connect-ip by name; ask for an address, a prefix or *", target: scope.description, context: context)
        }
        guard let tunnel = ConnectIPStream(router: ipRouter, reach: ConnectIPReach(allowed: policy.allowedTargets, scope: scope), stream: context.channel) else {
            counters.count(\.failed)
            return refuse(503, "the relay's connect-ip address pool is exhausted", proxyStatus: "proxy_internal_error", context: context)
        }
        guard !tunnel.routes.isEmpty else {
            tunnel.close()
            counters.count(\.forbidden)
            return refuse(403, "the scope holds nothing in the relay's allowed destinations", proxyStatus: "destination_ip_prohibited", target: scope.description, context: context)
        }
        state = .ipTunnel(tunnel)
        counters.count(\.ipStreams)
        context.write(wrapOutboundOut(.headers(.init(headers: [":status": "200", "capsule-protocol": "?1"]))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(bytes: tunnel.opening()))))), promise: nil)
        // What arrived while a token was redeemed.
        let waiting = pending
        pending = []
        for bytes in waiting {
            guard case .ipTunnel = state else { return }
            ipBody(bytes, endStream: false, tunnel: tunnel, context: context)
        }
        if endStream, case .ipTunnel = state { endIP(tunnel, context: context) }
    }

    private func ipBody(_ bytes: ByteBuffer, endStream: Bool, tunnel: ConnectIPStream, context: ChannelHandlerContext) {
        do {
            let answer = try tunnel.receive(bytes)
            if !answer.isEmpty { context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(bytes: answer))))), promise: nil) }
        } catch {
            // A malformed capsule stream is aborted (RFC 9297 §3.3).
            counters.count(\.malformed)
            logger.info("relay: malformed capsules on a connect-ip stream; stream reset", metadata: ["error": "\(error)"])
            context.writeAndFlush(wrapOutboundOut(.rstStream(.protocolError)), promise: nil)
            tunnel.close()
            state = .closed
            return
        }
        if endStream { endIP(tunnel, context: context) }
    }

    /// The client ended its side: the tunnel is over, its addresses go back to the pool.
    private func endIP(_ tunnel: ConnectIPStream, context: ChannelHandlerContext) {
        tunnel.close()
        state = .closed
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))), promise: nil)
    }

    private func body(_ bytes: ByteBuffer, endStream: Bool, context: ChannelHandlerContext) {
        switch state {
        case .ipTunnel(let tunnel):
            ipBody(bytes, endStream: endStream, tunnel: tunnel, context: context)
        case .connecting:
            pending.append(bytes)
            pendingEnd = pendingEnd || endStream
        case .tunnel(let target, let isUDP):
            deliver(bytes, to: target, isUDP: isUDP, context: context)
            if endStream { end(target, isUDP: isUDP, context: context) }
        case .awaitingHead, .closed:
            break
        }
    }

    private func deliver(_ bytes: ByteBuffer, to target: any Channel, isUDP: Bool, context: ChannelHandlerContext) {
        guard isUDP else {
            target.writeAndFlush(bytes, promise: nil)
            // The target's send buffer is full: stop reading the stream until it drains.
            if !target.isWritable { context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in } }
            return
        }
        capsules.append(bytes.readableBytesView)
        do {
            while let capsule = try capsules.next() {
                guard capsule.kind == .datagram else { continue }  // unknown types: dropped (RFC 9297 §3.2)
                let datagram = try ProxiedDatagram(capsule)
                guard datagram.contextID == ProxiedDatagram.payloadContext else { continue }  // RFC 9298 §4
                guard datagram.payload.count <= Self.maximumUDPPayload, let remote = target.remoteAddress else {
                    counters.count(\.datagramsDropped)
                    continue
                }
                target.writeAndFlush(AddressedEnvelope(remoteAddress: remote, data: ByteBuffer(bytes: datagram.payload)), promise: nil)
                counters.count(\.datagramsToTargets)
            }
        } catch {
            // A malformed capsule stream is aborted (RFC 9297 §3.3).
            counters.count(\.malformed)
            logger.info("relay: malformed capsules on a connect-udp stream; stream reset", metadata: ["error": "\(error)"])
            context.writeAndFlush(wrapOutboundOut(.rstStream(.protocolError)), promise: nil)
            target.close(promise: nil)
            state = .closed
        }
    }

    /// The client finished sending: a TCP target is shut down for writing (its answer may still
    /// come); a UDP flow is over.
    private func end(_ target: any Channel, isUDP: Bool, context: ChannelHandlerContext) {
        if isUDP {
            target.close(promise: nil)
            context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))), promise: nil)
        } else {
            target.close(mode: .output, promise: nil)
        }
    }

    /// Answers `status` and ends the stream. The log line names no target (users' destinations
    /// stay out of the relay's logs) unless the level is debug.
    private func refuse(
        _ status: Int, _ reason: String, proxyStatus: String? = nil, target: String? = nil, extra: [(String, String)] = [], context: ChannelHandlerContext
    ) {
        logger.info("relay: request refused", metadata: ["status": "\(status)", "reason": "\(reason)"])
        if let target { logger.debug("relay: refused target", metadata: ["status": "\(status)", "target": "\(target)"]) }
        var headers: HPACKHeaders = [":status": "\(status)"]
        // RFC 9209: which proxy, and what kind of failure.
        if let proxyStatus { headers.add(name: "proxy-status", value: "netext-relay; error=\(proxyStatus)") }
        for (name, value) in extra { headers.add(name: name, value: value) }
        state = .closed
        context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
    }
}

/// In the target's channel: what the target sends goes to the stream (as it is for TCP, in a
/// DATAGRAM capsule for UDP: `payload` makes the stream's bytes of what the target sent); the
/// target's end ends the stream.
final class TargetToStream<Inbound>: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = Inbound

    private let stream: any Channel
    private let payload: (Inbound) -> ByteBuffer
    private var ended = false

    init(stream: any Channel, payload: @escaping (Inbound) -> ByteBuffer) {
        self.stream = stream
        self.payload = payload
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(payload(unwrapInboundIn(data))))), promise: nil)
        // The stream's window is full: read no more until it opens (RelayStreamHandler).
        if !stream.isWritable { context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in } }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The target drained: read the stream again. (A stream channel does not read by itself
        // when its autoRead comes back on, unlike a socket's: the frames it holds wait for a read.)
        if context.channel.isWritable {
            let stream = stream
            stream.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in stream.read() }
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { endStream() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        endStream()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A failed target resets the stream (RFC 9113 §8.5: CONNECT_ERROR).
        if !ended {
            ended = true
            stream.writeAndFlush(HTTP2Frame.FramePayload.rstStream(.connectError), promise: nil)
        }
        context.close(promise: nil)
    }

    private func endStream() {
        guard !ended else { return }
        ended = true
        stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true)), promise: nil)
    }
}
