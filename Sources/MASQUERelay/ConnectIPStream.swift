import HTTPCapsules
import NetExtCore
import NIOCore
import NIOHTTP2
import VariableLengthIntegers

/// One connect-ip stream's tunnel at the relay (RFC 9484): its lease of addresses, what it may
/// reach, and its capsules. It opens with ADDRESS_ASSIGN (the leased addresses, Request ID 0) and
/// ROUTE_ADVERTISEMENT (the reachable ranges); then each DATAGRAM capsule (context ID 0) is an IP
/// packet for the router, an ADDRESS_REQUEST gets an ADDRESS_ASSIGN back, and the peer's own
/// ADDRESS_ASSIGN and ROUTE_ADVERTISEMENT are read and set aside (the relay routes nothing to a
/// client beyond its address). Packets for the lease come from the router's thread and are
/// written as DATAGRAM capsules while the stream can take them, dropped when it cannot (IP
/// loses packets; a full stream must not stall the relay's other clients).
final class ConnectIPStream {
    let lease: ConnectIPRouter.Lease
    let reach: ConnectIPReach
    private let router: ConnectIPRouter
    private var capsules = CapsuleParser()
    /// The Request IDs answered so far, kept in every later ADDRESS_ASSIGN (each one states the
    /// whole set, RFC 9484 §4.7.1).
    private var answered: [ProxiedAddress] = []
    static let answersKept = 16

    /// Leases addresses for `stream`; nil when a pool is exhausted.
    init?(router: ConnectIPRouter, reach: ConnectIPReach, stream: any Channel) {
        guard let lease = router.lease(deliver: Self.deliverer(to: stream)) else { return nil }
        self.lease = lease
        self.reach = reach
        self.router = router
    }

    /// The ranges this stream's packets may reach (empty: nothing; the relay refuses the request).
    var routes: [IPAddressRange] { reach.routes(addressSizes: Set(lease.addresses.map(\.address.count))) }

    /// The capsules the stream starts with.
    func opening() -> [UInt8] {
        IPProxyingCapsule.addressAssign(assigned()).capsule.encoded + IPProxyingCapsule.routeAdvertisement(routes).capsule.encoded
    }

    /// Takes the stream's bytes; returns the capsules to answer with (empty: none). Throws on a
    /// malformed capsule stream, which the caller resets.
    func receive(_ bytes: ByteBuffer) throws(CapsuleError) -> [UInt8] {
        capsules.append(bytes.readableBytesView)
        var reply: [UInt8] = []
        while let capsule = try capsules.next() {
            if capsule.kind == .datagram {
                let datagram = try ProxiedDatagram(capsule)
                guard datagram.contextID == ProxiedDatagram.payloadContext else { continue }  // RFC 9484 §6
                datagram.payload.withUnsafeBytes { _ = router.toNetwork($0, lease: lease, reach: reach) }
                continue
            }
            guard let ipCapsule = try IPProxyingCapsule(capsule) else { continue }  // unknown types: dropped (RFC 9297 §3.2)
            if case .addressRequest(let requests) = ipCapsule {
                for request in requests { answered.append(answer(request)) }
                // A peer asking again and again does not grow the relay's memory.
                if answered.count > Self.answersKept { answered.removeFirst(answered.count - Self.answersKept) }
                reply += IPProxyingCapsule.addressAssign(assigned()).capsule.encoded
            }
        }
        return reply
    }

    /// Gives the addresses back.
    func close() {
        router.release(lease)
    }

    /// The leased addresses (as answers to the requests that asked for their family, else
    /// unrequested, ID 0), and the refusals of requests for a family the relay has no pool of.
    private func assigned() -> [ProxiedAddress] {
        var entries: [ProxiedAddress] = []
        for address in lease.addresses {
            let requestID = answered.last { $0.prefix == address && $0.requestID != 0 }?.requestID ?? 0
            entries.append(ProxiedAddress(requestID: requestID, prefix: address))
        }
        for refusal in answered where refusal.prefix.address.allSatisfy({ $0 == 0 }) { entries.append(refusal) }
        return entries
    }

    /// A request is granted the leased address of its family (the relay gives each stream one
    /// address a family, whatever was asked), or refused: an all-zero address of the family with
    /// the family's full prefix length (RFC 9484 §4.7.1).
    private func answer(_ request: RequestedAddress) -> ProxiedAddress {
        if let address = lease.addresses.first(where: { $0.isIPv6 == request.prefix.isIPv6 }) {
            return ProxiedAddress(requestID: request.requestID, prefix: address)
        }
        let size = request.prefix.address.count
        return ProxiedAddress(requestID: request.requestID, prefix: IPPrefix(address: [UInt8](repeating: 0, count: size), length: size * 8))
    }

    /// Writes packets from the network to `stream` as DATAGRAM capsules (context ID 0) in one
    /// write and flush, when the stream's window has room (else none is taken); called on the
    /// router's thread.
    private static func deliverer(to stream: any Channel) -> ConnectIPRouter.Deliver {
        { packets in
            guard stream.isWritable, stream.isActive else { return 0 }
            var buffer = stream.allocator.buffer(capacity: packets.reduce(0) { $0 + $1.count + 8 })
            var header: [UInt8] = []
            header.reserveCapacity(10)
            for packet in packets {
                header.removeAll(keepingCapacity: true)
                ProxiedDatagram.appendCapsuleHeader(payloadLength: packet.count, to: &header)
                buffer.writeBytes(header)
                buffer.writeBytes(packet)
            }
            stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer))), promise: nil)
            return packets.count
        }
    }
}
