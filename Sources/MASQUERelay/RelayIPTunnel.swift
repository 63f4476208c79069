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
        send([packet]) == 1
    }

    /// Sends packets in order as one write (their capsules in one DATA frame's worth of bytes,
    /// one hop to the stream's event loop and one flush for all): what a packet tunnel reads
    /// from its interface in one go. Empty and oversized packets are skipped; returns how many
    /// were sent (none once the tunnel has ended).
    @discardableResult
    public func send(_ packets: [[UInt8]]) -> Int {
        guard stream.isActive else { return 0 }
        var buffer = stream.allocator.buffer(capacity: packets.reduce(0) { $0 + $1.count + 8 })
        var header: [UInt8] = []
        header.reserveCapacity(10)
        var sent = 0
        for packet in packets where !packet.isEmpty && packet.count <= Self.maximumPacket {
            header.removeAll(keepingCapacity: true)
            ProxiedDatagram.appendCapsuleHeader(payloadLength: packet.count, to: &header)
            buffer.writeBytes(header)
            buffer.writeBytes(packet)
            sent += 1
        }
        guard sent > 0 else { return 0 }
        stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer))), promise: nil)
        return sent
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
        let request: HPACKHeaders = [
            ":method": "CONNECT", ":protocol": "connect-ip", ":scheme": "https", ":authority": relayAuthority,
            ":path": scope.path, "capsule-protocol": "?1",
        ]
        let eventLoop = eventLoop
        let (stream, configuration, packets, deadline) = try await admitting { fields in
            let (packets, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(4_096))
            let answered = eventLoop.makePromise(of: Void.self)
            let configuration = IPTunnelConfiguration(promise: eventLoop.makePromise())
            var headers = request
            for field in fields { headers.add(name: field.name, value: field.value) }
            let handler = DatagramStreamHandler(
                request: headers, what: "the IP tunnel to \(scope)", answered: answered, continuation: continuation,
                otherCapsules: { try configuration.read($0) },
                ended: { configuration.fail("the IP tunnel's stream ended before the relay assigned it an address and routes (\($0))") })
            // The deadline covers the answer and the tunnel's addresses and routes.
            let deadline = eventLoop.scheduleTask(in: .milliseconds(Int64(timeout / .milliseconds(1)))) {
                configuration.fail("the relay assigned the tunnel no address and route within \(timeout)")
            }
            do { return (try await self.openAnswered(handler, answered: answered), configuration, packets, deadline) } catch {
                deadline.cancel()
                configuration.fail("refused")
                continuation.finish()
                throw error
            }
        }
        do {
            let configured = try await configuration.promise.futureResult.get()
            deadline.cancel()
            return RelayIPTunnel(stream: stream, assignedAddresses: configured.addresses, routes: configured.routes, packets: packets)
        } catch {
            deadline.cancel()
            stream.close(promise: nil)
            throw error
        }
    }
}

/// What a connect-ip stream's first ADDRESS_ASSIGN (with an address: an all-zero one refuses a
/// request, RFC 9484 §4.7.1) and first ROUTE_ADVERTISEMENT say; later ones are read (a malformed
/// one ends the stream) and not acted on. Used on the stream's event loop.
final class IPTunnelConfiguration: @unchecked Sendable {
    struct Configured: Sendable {
        var addresses: [IPPrefix]
        var routes: [IPAddressRange]
    }

    let promise: EventLoopPromise<Configured>
    private var addresses: [IPPrefix]?
    private var routes: [IPAddressRange]?

    init(promise: EventLoopPromise<Configured>) { self.promise = promise }

    func read(_ capsule: Capsule) throws {
        switch try IPProxyingCapsule(capsule) {
        case .addressAssign(let assigned):
            let usable = assigned.map(\.prefix).filter { !$0.address.allSatisfy { $0 == 0 } }
            if addresses == nil, !usable.isEmpty { addresses = usable }
        case .routeAdvertisement(let ranges):
            if routes == nil { routes = ranges }
        case .addressRequest, nil:
            break  // the client asks; a relay asking is not answered here
        }
        if let addresses, let routes { promise.succeed(Configured(addresses: addresses, routes: routes)) }
    }

    /// Fails the wait (nothing once configured: a promise completes once).
    func fail(_ reason: String) {
        promise.fail(RelayClient.Failure(description: reason, status: nil))
    }
}
