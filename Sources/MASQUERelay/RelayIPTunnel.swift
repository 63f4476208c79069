import HTTPCapsules
import NetExtCore
import NIOCore
import NIOHPACK
import NIOHTTP2

/// An IP tunnel through a relay: one connect-ip stream (RFC 9484). The relay assigns the
/// tunnel its addresses (ADDRESS_ASSIGN, §4.7.1) and says which destinations it reaches
/// (ROUTE_ADVERTISEMENT, §4.7.3); whole IP packets then go both ways, each in a DATAGRAM
/// capsule with context ID 0 (§6, RFC 9297 §3.5). A packet must come from an assigned address
/// and go to an advertised route, or the relay drops it (§7).
///
/// What the relay assigns and advertises when the tunnel opens is kept; a later ADDRESS_ASSIGN
/// or ROUTE_ADVERTISEMENT (a relay may send them at any time) is read and checked but not acted
/// on, as a packet tunnel's settings are set once.
public final class RelayIPTunnel: Sendable {
    /// The addresses the relay assigned (packets must come from one of them).
    public let assignedAddresses: [IPPrefix]
    /// The destinations the relay reaches.
    public let routes: [IPAddressRange]
    /// Packets from the relay, in order; finishes when the stream ends.
    public let packets: AsyncStream<[UInt8]>
    private let stream: any Channel

    /// The largest packet a capsule carries here (an IPv4 packet's bound; the relay's MTU is
    /// usually far smaller).
    public static let maximumPacket = 65_535

    init(stream: any Channel, assignedAddresses: [IPPrefix], routes: [IPAddressRange], packets: AsyncStream<[UInt8]>) {
        self.stream = stream
        self.assignedAddresses = assignedAddresses
        self.routes = routes
        self.packets = packets
    }

    /// Sends one IP packet. Returns false, sending nothing, for an empty packet, one over
    /// ``maximumPacket``, or once the tunnel has ended.
    @discardableResult
    public func send(_ packet: [UInt8]) -> Bool {
        guard !packet.isEmpty, packet.count <= Self.maximumPacket, stream.isActive else { return false }
        let capsule = ProxiedDatagram(payload: packet).capsule.encoded
        stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(bytes: capsule)))), promise: nil)
        return true
    }

    /// Whether the stream is still open.
    public var isOpen: Bool { stream.isActive }

    /// Ends the tunnel (the relay releases its address).
    public func close() {
        stream.close(promise: nil)
    }
}

extension RelayClient {
    /// Opens an IP tunnel through the relay (connect-ip over extended CONNECT, RFC 9484 §4.1
    /// and RFC 8441 §4, at the default URI template's path for `scope`). Returns once the relay
    /// answered 200 and sent the tunnel's addresses and routes; throws with its status when it
    /// refused, or when they do not come within `timeout`.
    public func openIPTunnel(scope: ConnectIPScope = ConnectIPScope(), timeout: Duration = .seconds(10)) async throws -> RelayIPTunnel {
        let (packets, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(4_096))
        let answered = eventLoop.makePromise(of: Void.self)
        let configured = eventLoop.makePromise(of: IPStreamHandler.Configuration.self)
        var headers: HPACKHeaders = [
            ":method": "CONNECT", ":protocol": "connect-ip", ":scheme": "https", ":authority": relayAuthority,
            ":path": scope.path, "capsule-protocol": "?1",
        ]
        for field in requestFields { headers.add(name: field.name, value: field.value) }
        let handler = IPStreamHandler(request: headers, scope: scope.description, answered: answered, configured: configured, continuation: continuation)
        let stream: any Channel
        do {
            stream = try await openStream(handler)
        } catch {
            answered.fail(error)
            configured.fail(error)
            continuation.finish()
            throw Failure(description: "could not open a stream to the relay: \(error)", status: nil)
        }
        let deadline = eventLoop.scheduleTask(in: .milliseconds(Int64(timeout / .milliseconds(1)))) {
            configured.fail(Failure(description: "the relay assigned the tunnel no address and route within \(timeout)", status: nil))
        }
        do {
            try await answered.futureResult.get()
            let configuration = try await configured.futureResult.get()
            deadline.cancel()
            return RelayIPTunnel(stream: stream, assignedAddresses: configuration.addresses, routes: configuration.routes, packets: packets)
        } catch {
            deadline.cancel()
            stream.close(promise: nil)
            throw error
        }
    }
}

/// A connect-ip stream on the client: sends the request, learns the answer, waits for the
/// relay's first ADDRESS_ASSIGN and ROUTE_ADVERTISEMENT, then reads DATAGRAM capsules (context
/// 0) into the tunnel's packets. A malformed capsule aborts the stream (RFC 9484 §4.7); capsules
/// of unknown types are skipped (RFC 9297 §3.2).
final class IPStreamHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    struct Configuration: Sendable {
        var addresses: [IPPrefix]
        var routes: [IPAddressRange]
    }

    private let request: HPACKHeaders
    private var answer: RelayAnswer
    private let configured: EventLoopPromise<Configuration>
    private let continuation: AsyncStream<[UInt8]>.Continuation
    private var capsules = CapsuleParser()
    private var addresses: [IPPrefix]?
    private var routes: [IPAddressRange]?

    init(request: HPACKHeaders, scope: String, answered: EventLoopPromise<Void>, configured: EventLoopPromise<Configuration>, continuation: AsyncStream<[UInt8]>.Continuation) {
        self.request = request
        self.answer = RelayAnswer(promise: answered, what: "the IP tunnel to \(scope)")
        self.configured = configured
        self.continuation = continuation
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: request))), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch answer.take(frame) {
        case .notTaken: break
        case .taken: return
        case .refused:
            configured.fail(RelayClient.Failure(description: "the relay refused the IP tunnel", status: nil))
            context.close(promise: nil)
            return
        }
        switch frame {
        case .data(let data):
            if case .byteBuffer(let bytes) = data.data { capsules.append(bytes.readableBytesView) }
            do {
                while let capsule = try capsules.next() {
                    if capsule.kind == .datagram {
                        let datagram = try ProxiedDatagram(capsule)
                        guard datagram.contextID == ProxiedDatagram.payloadContext, !datagram.payload.isEmpty else { continue }
                        continuation.yield(datagram.payload)
                    } else if let ipCapsule = try IPProxyingCapsule(capsule) {
                        configure(with: ipCapsule)
                    }
                }
            } catch {
                configured.fail(RelayClient.Failure(description: "the relay sent a malformed capsule: \(error)", status: nil))
                context.close(promise: nil)
                return
            }
            if data.endStream { context.close(promise: nil) }
        case .rstStream:
            context.close(promise: nil)
        default:
            break
        }
    }

    /// The first ADDRESS_ASSIGN (with an address: an all-zero one refuses a request, §4.7.1) and
    /// the first ROUTE_ADVERTISEMENT configure the tunnel.
    private func configure(with capsule: IPProxyingCapsule) {
        switch capsule {
        case .addressAssign(let assigned):
            let usable = assigned.map(\.prefix).filter { !$0.address.allSatisfy { $0 == 0 } }
            if addresses == nil, !usable.isEmpty { addresses = usable }
        case .routeAdvertisement(let ranges):
            if routes == nil { routes = ranges }
        case .addressRequest:
            break  // the client asks; a relay asking is not answered here
        }
        if let addresses, let routes { configured.succeed(Configuration(addresses: addresses, routes: routes)) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        answer.streamEnded()
        configured.fail(RelayClient.Failure(description: "the IP tunnel's stream ended before the relay assigned it an address and routes", status: nil))
        continuation.finish()
        context.fireChannelInactive()
    }
}
