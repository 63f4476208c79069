import NetExtCore

/// netextd ↔ app proxy provider on the provider's descriptor 4 (a sequenced-packet socket):
/// each flow is one message with the flow's socket attached (SCM_RIGHTS), each answer one
/// message back. Binary, integers big-endian:
///
/// offer (netextd → provider, with the descriptor): `0x11 | flow id u64 | transport u8 (0 tcp,
/// 1 udp; + 0x80 for an inbound flow) | remote address length u8 (4/16) + bytes | remote port u16 | local address length u8 +
/// bytes | local port u16 | pid u32 (0: unknown) | app identifier length u16 + UTF-8 |
/// executable length u16 + UTF-8 | remote host name length u16 + UTF-8 (0: unknown) | initial
/// datagram length u16 + bytes (UDP: the app's first datagram; TCP: 0)`
///
/// answer (provider → netextd): `0x12 | flow id u64 | handled u8 (1: the provider took the flow,
/// 0: it declined)`
///
/// ended (provider → netextd, after the flow's answer): `0x13 | flow id u64` — a flow the
/// provider took has closed its socket (netextd counts the provider's live flows by these).
public enum AppProxyFlowCodec {
    public static let offerTag: UInt8 = 0x11
    public static let answerTag: UInt8 = 0x12
    public static let endedTag: UInt8 = 0x13
    /// Set in an offer's transport byte for an inbound flow.
    static let inboundFlag: UInt8 = 0x80

    /// What a provider says on the channel.
    public enum ProviderMessage: Sendable, Hashable {
        case answer(Answer)
        /// A taken flow is over.
        case ended(flowID: UInt64)
    }
    /// The longest message (three texts of at most `FlowChannelCodec.maximumText` bytes and a
    /// datagram).
    public static let maximumMessage = 3 * FlowChannelCodec.maximumText + maximumDatagram + 64
    /// The largest UDP payload (IPv4: 65,535 − 20 − 8).
    public static let maximumDatagram = 65_507

    /// The provider's answer to an offered flow.
    public struct Answer: Sendable, Hashable {
        public var flowID: UInt64
        public var handled: Bool
        public init(flowID: UInt64, handled: Bool) {
            self.flowID = flowID
            self.handled = handled
        }
    }

    public static func encode(_ offer: AppProxyFlowOffer) -> [UInt8] {
        var bytes: [UInt8] = [offerTag]
        bytes.reserveCapacity(96 + offer.sourceAppIdentifier.utf8.count + (offer.executablePath?.utf8.count ?? 0) + (offer.remoteHostname?.utf8.count ?? 0))
        FlowChannelCodec.append(offer.id, to: &bytes)
        bytes.append(offer.transport.rawValue | (offer.direction == .inbound ? inboundFlag : 0))
        for endpoint in [offer.remoteEndpoint, offer.localEndpoint] {
            let address = IPPrefix.parseAddress(endpoint.hostname) ?? [0, 0, 0, 0]
            bytes.append(UInt8(address.count))
            bytes += address
            FlowChannelCodec.append(endpoint.port, to: &bytes)
        }
        FlowChannelCodec.append(UInt32(bitPattern: offer.processIdentifier ?? 0), to: &bytes)
        FlowChannelCodec.appendText(offer.sourceAppIdentifier, to: &bytes)
        FlowChannelCodec.appendText(offer.executablePath ?? "", to: &bytes)
        FlowChannelCodec.appendText(offer.remoteHostname ?? "", to: &bytes)
        let datagram = offer.initialDatagram.prefix(maximumDatagram)
        FlowChannelCodec.append(UInt16(datagram.count), to: &bytes)
        bytes += datagram
        return bytes
    }

    public static func decodeOffer(_ bytes: UnsafeRawBufferPointer) throws(FlowChannelCodec.DecodeError) -> AppProxyFlowOffer {
        var reader = FlowChannelCodec.Reader(bytes: bytes)
        let tag = try reader.uint8()
        guard tag == offerTag else { throw .invalid("message type \(tag) (expected a flow offer, \(offerTag))", at: 0) }
        let id = try reader.uint64()
        let rawTransport = try reader.uint8()
        guard let transport = AppProxyFlowOffer.Transport(rawValue: rawTransport & ~inboundFlag) else { throw .invalid("transport \(rawTransport)", at: reader.offset - 1) }
        let direction: TrafficDirection = rawTransport & inboundFlag != 0 ? .inbound : .outbound
        guard direction == .outbound || transport == .tcp else { throw .invalid("an inbound UDP flow", at: reader.offset - 1) }
        let remote = NetworkEndpoint(hostname: IPPrefix.format(try reader.address()), port: try reader.uint16())
        let local = NetworkEndpoint(hostname: IPPrefix.format(try reader.address()), port: try reader.uint16())
        let pid = Int32(bitPattern: try reader.uint32())
        let app = try reader.text()
        let executable = try reader.text()
        let hostname = try reader.text()
        let datagramLength = Int(try reader.uint16())
        guard datagramLength <= maximumDatagram else { throw .invalid("datagram of \(datagramLength) bytes", at: reader.offset - 2) }
        guard transport == .udp || datagramLength == 0 else { throw .invalid("a datagram in a TCP offer", at: reader.offset - 2) }
        let datagram = Array(try reader.take(datagramLength))
        try reader.finish()
        return AppProxyFlowOffer(
            id: id, transport: transport, remoteEndpoint: remote, localEndpoint: local, remoteHostname: hostname.isEmpty ? nil : hostname,
            sourceAppIdentifier: app, processIdentifier: pid == 0 ? nil : pid, executablePath: executable.isEmpty ? nil : executable,
            initialDatagram: datagram, direction: direction)
    }

    public static func encode(_ answer: Answer) -> [UInt8] {
        var bytes: [UInt8] = [answerTag]
        FlowChannelCodec.append(answer.flowID, to: &bytes)
        bytes.append(answer.handled ? 1 : 0)
        return bytes
    }

    public static func decodeAnswer(_ bytes: UnsafeRawBufferPointer) throws(FlowChannelCodec.DecodeError) -> Answer {
        var reader = FlowChannelCodec.Reader(bytes: bytes)
        let tag = try reader.uint8()
        guard tag == answerTag else { throw .invalid("message type \(tag) (expected a flow answer, \(answerTag))", at: 0) }
        let id = try reader.uint64()
        let handled = try reader.uint8()
        guard handled <= 1 else { throw .invalid("answer \(handled)", at: reader.offset - 1) }
        try reader.finish()
        return Answer(flowID: id, handled: handled == 1)
    }

    public static func encodeEnded(flowID: UInt64) -> [UInt8] {
        var bytes: [UInt8] = [endedTag]
        FlowChannelCodec.append(flowID, to: &bytes)
        return bytes
    }

    /// An answer or an end notice; errors name the offset at fault.
    public static func decodeProviderMessage(_ bytes: UnsafeRawBufferPointer) throws(FlowChannelCodec.DecodeError) -> ProviderMessage {
        guard bytes.first == endedTag else { return .answer(try decodeAnswer(bytes)) }
        var reader = FlowChannelCodec.Reader(bytes: bytes)
        _ = try reader.uint8()
        let id = try reader.uint64()
        try reader.finish()
        return .ended(flowID: id)
    }
}
