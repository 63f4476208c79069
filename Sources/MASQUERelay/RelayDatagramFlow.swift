import HTTPCapsules
import NIOCore
import NIOHPACK
import NIOHTTP2

/// A UDP flow through a relay: one connect-udp stream (RFC 9298 §3) to one target, each
/// datagram in a DATAGRAM capsule with context ID 0 (RFC 9297 §3.5, RFC 9298 §5). Datagrams
/// are neither retransmitted nor acknowledged end to end; the stream is reliable only between
/// this machine and the relay.
public final class RelayDatagramFlow: Sendable {
    /// The target's answers, in the order the relay passed them on; finishes when the stream ends.
    public let datagrams: AsyncStream<[UInt8]>
    private let stream: any Channel

    /// The largest payload a datagram may carry (the IPv6 bound, as the relay's).
    public static let maximumPayload = 65_527

    init(stream: any Channel, datagrams: AsyncStream<[UInt8]>) {
        self.stream = stream
        self.datagrams = datagrams
    }

    /// Sends one datagram to the target. Returns false, sending nothing, for a payload over
    /// ``maximumPayload`` or once the flow has ended.
    @discardableResult
    public func send(_ payload: [UInt8]) -> Bool {
        guard payload.count <= Self.maximumPayload, stream.isActive else { return false }
        let capsule = ProxiedDatagram(payload: payload).capsule.encoded
        stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(bytes: capsule)))), promise: nil)
        return true
    }

    /// Ends the flow (the stream is closed; the relay closes its socket to the target).
    public func close() {
        stream.close(promise: nil)
    }
}

extension RelayClient {
    /// Opens a UDP flow to `host`:`port` through the relay (connect-udp over extended CONNECT,
    /// RFC 8441 §4, with the relay's URI template). Returns once the relay answered 200;
    /// throws with its status when it refused.
    public func openDatagramFlow(toHost host: String, port: UInt16) async throws -> RelayDatagramFlow {
        let target: ConnectUDPTarget
        do { target = try ConnectUDPTarget(host: host, port: port) } catch {
            throw Failure(description: "\(host):\(port) is not a UDP target: \(error)", status: nil)
        }
        let request: HPACKHeaders = [
            ":method": "CONNECT", ":protocol": "connect-udp", ":scheme": "https", ":authority": relayAuthority,
            ":path": target.path(template: udpPathTemplate), "capsule-protocol": "?1",
        ]
        let eventLoop = eventLoop
        return try await admitting { fields in
            let (datagrams, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(4_096))
            let answered = eventLoop.makePromise(of: Void.self)
            var headers = request
            for field in fields { headers.add(name: field.name, value: field.value) }
            let handler = DatagramStreamHandler(request: headers, what: "the UDP flow to \(target.description)", answered: answered, continuation: continuation)
            do { return RelayDatagramFlow(stream: try await self.openAnswered(handler, answered: answered), datagrams: datagrams) } catch {
                continuation.finish()
                throw error
            }
        }
    }
}

/// A datagram stream on the client (connect-udp, and connect-ip's packets): sends the request,
/// learns the answer, then reads DATAGRAM capsules with context 0 into the flow's stream.
/// Datagrams of other contexts and capsules of unknown types are skipped (RFC 9297 §3.2, RFC 9298
/// §4); other known capsules go to `otherCapsules` (connect-ip's, RFC 9484 §4.7). A malformed
/// capsule ends the stream. `ended` is told once why the stream ended, whichever way.
final class DatagramStreamHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let request: HPACKHeaders
    private var answer: RelayAnswer
    private let continuation: AsyncStream<[UInt8]>.Continuation
    private var capsules = CapsuleParser()
    private let otherCapsules: ((Capsule) throws -> Void)?
    private var ended: ((String) -> Void)?

    init(
        request: HPACKHeaders, what: String, answered: EventLoopPromise<Void>, continuation: AsyncStream<[UInt8]>.Continuation,
        otherCapsules: ((Capsule) throws -> Void)? = nil, ended: ((String) -> Void)? = nil
    ) {
        self.request = request
        self.answer = RelayAnswer(promise: answered, what: what)
        self.continuation = continuation
        self.otherCapsules = otherCapsules
        self.ended = ended
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
            end("the relay refused it")
            context.close(promise: nil)
            return
        }
        switch frame {
        case .data(let data):
            if case .byteBuffer(let bytes) = data.data { capsules.append(bytes.readableBytesView) }
            do {
                while let capsule = try capsules.next() {
                    guard capsule.kind == .datagram else {
                        if capsule.kind != nil { try otherCapsules?(capsule) }
                        continue
                    }
                    let datagram = try ProxiedDatagram(capsule)
                    guard datagram.contextID == ProxiedDatagram.payloadContext else { continue }
                    continuation.yield(datagram.payload)
                }
            } catch {
                end("the relay sent a malformed capsule: \(error)")
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

    func channelInactive(context: ChannelHandlerContext) {
        answer.streamEnded()
        end("the stream ended")
        continuation.finish()
        context.fireChannelInactive()
    }

    private func end(_ reason: String) {
        let told = ended
        ended = nil
        told?(reason)
    }
}
