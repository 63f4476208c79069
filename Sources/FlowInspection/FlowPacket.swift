import NetExtCore

/// What the content filter reads from one IP packet: addresses, transport, ports, TCP flags and
/// sequence numbers, and where the transport payload lies. Tolerates a packet cut short by the
/// queue's copy range (the payload is then what arrived); refuses anything whose headers do
/// not fit. IPv4: RFC 791 §3.1; IPv6: RFC 8200 §3–4; TCP: RFC 9293 §3.1; UDP: RFC 768.
public struct FlowPacket: Sendable, Hashable {
    public var isIPv6: Bool
    public var transport: FlowProtocol
    /// The IANA protocol number (for `other`).
    public var protocolNumber: UInt8
    public var source: [UInt8]
    public var destination: [UInt8]
    /// Ports for TCP and UDP; for ICMP echo the identifier in both; else 0.
    public var sourcePort: UInt16
    public var destinationPort: UInt16
    /// TCP flags (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10).
    public var tcpFlags: UInt8
    public var sequenceNumber: UInt32
    public var acknowledgementNumber: UInt32
    /// The transport payload's offset in the packet and its length (as far as it was copied).
    public var payloadOffset: Int
    public var payloadLength: Int
    /// Whether this is a non-first fragment (no transport header of its own).
    public var isFragment: Bool

    public static let fin: UInt8 = 0x01, syn: UInt8 = 0x02, rst: UInt8 = 0x04, ack: UInt8 = 0x10

    /// Parses `bytes`; nil when the IP or transport header is malformed or cut off.
    public init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 20 else { return nil }
        var transportOffset: Int
        var end: Int
        var next: UInt8
        isFragment = false
        switch bytes[0] >> 4 {
        case 4:
            let headerLength = Int(bytes[0] & 0x0f) * 4
            let total = Int(bytes[2]) << 8 | Int(bytes[3])
            guard headerLength >= 20, headerLength <= bytes.count, total >= headerLength else { return nil }
            isIPv6 = false
            source = Array(bytes[12..<16])
            destination = Array(bytes[16..<20])
            next = bytes[9]
            transportOffset = headerLength
            end = min(total, bytes.count)
            let fragmentOffset = (Int(bytes[6]) & 0x1f) << 8 | Int(bytes[7])
            isFragment = fragmentOffset != 0
        case 6:
            guard bytes.count >= 40 else { return nil }
            isIPv6 = true
            source = Array(bytes[8..<24])
            destination = Array(bytes[24..<40])
            next = bytes[6]
            transportOffset = 40
            let payloadLength = Int(bytes[4]) << 8 | Int(bytes[5])
            // A jumbo or GSO packet may say 0; then the buffer's end is the packet's end.
            end = payloadLength == 0 ? bytes.count : min(40 + payloadLength, bytes.count)
            // Skip the extension headers that may precede the transport header (RFC 8200 §4.1).
            var hops = 0
            while [0, 43, 60, 44].contains(next), hops < 8 {
                guard transportOffset + 8 <= end else { return nil }
                let header = next
                next = bytes[transportOffset]
                if header == 44 {
                    let offset = (Int(bytes[transportOffset + 2]) << 8 | Int(bytes[transportOffset + 3])) >> 3
                    isFragment = offset != 0
                    transportOffset += 8
                } else {
                    transportOffset += (Int(bytes[transportOffset + 1]) + 1) * 8
                }
                hops += 1
            }
            guard transportOffset <= end else { return nil }
        default:
            return nil
        }
        protocolNumber = next
        transport = FlowProtocol(number: next)
        sourcePort = 0
        destinationPort = 0
        tcpFlags = 0
        sequenceNumber = 0
        acknowledgementNumber = 0
        payloadOffset = transportOffset
        payloadLength = max(0, end - transportOffset)
        guard transportOffset <= end, !isFragment else { return }
        func word16(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
        func word32(_ at: Int) -> UInt32 { UInt32(word16(at)) << 16 | UInt32(word16(at + 2)) }
        switch transport {
        case .tcp:
            guard transportOffset + 20 <= end else { return nil }
            let dataOffset = Int(bytes[transportOffset + 12] >> 4) * 4
            guard dataOffset >= 20, transportOffset + dataOffset <= end else { return nil }
            sourcePort = word16(transportOffset)
            destinationPort = word16(transportOffset + 2)
            sequenceNumber = word32(transportOffset + 4)
            acknowledgementNumber = word32(transportOffset + 8)
            tcpFlags = bytes[transportOffset + 13]
            payloadOffset = transportOffset + dataOffset
            payloadLength = end - payloadOffset
        case .udp:
            guard transportOffset + 8 <= end else { return nil }
            sourcePort = word16(transportOffset)
            destinationPort = word16(transportOffset + 2)
            payloadOffset = transportOffset + 8
            payloadLength = end - payloadOffset
        case .icmp, .icmpv6:
            guard transportOffset + 8 <= end else { return nil }
            // Echo request/reply (ICMP 8/0, ICMPv6 128/129) carry an identifier that tells
            // one ping from another; conntrack keys ICMP flows by it.
            let type = bytes[transportOffset]
            if [0, 8, 128, 129].contains(type) {
                sourcePort = word16(transportOffset + 4)
                destinationPort = sourcePort
            }
            payloadOffset = transportOffset + 8
            payloadLength = end - payloadOffset
        case .other:
            break
        }
    }

    public init?(_ bytes: [UInt8]) {
        guard let packet = bytes.withUnsafeBytes({ FlowPacket($0) }) else { return nil }
        self = packet
    }
}
