import NetExtCore

/// ICMPv4 echo packets (RFC 792, "Echo or Echo Reply Message") in IPv4 (RFC 791 §3.1), built
/// and read as whole IP packets, for labs that play a host on either side of a tunnel.
public enum EchoPacket {
    /// An echo request from `source` to `destination` (4-byte addresses) with 32 bytes of payload.
    public static func request(from source: [UInt8], to destination: [UInt8], identifier: UInt16, sequence: UInt16) -> [UInt8] {
        let payload = (0..<32).map { UInt8(truncatingIfNeeded: $0 &+ Int(sequence)) }
        return packet(type: 8, from: source, to: destination, identifier: identifier, sequence: sequence, payload: payload)
    }

    /// What an echo request or reply carries, read from an IPv4 packet; nil for anything else
    /// (another protocol, a fragment, a damaged checksum, a short packet).
    public struct Parsed: Equatable, Sendable {
        public var isRequest: Bool
        public var source: [UInt8]
        public var destination: [UInt8]
        public var identifier: UInt16
        public var sequence: UInt16
        public var payload: [UInt8]
    }

    public static func parse(_ bytes: [UInt8]) -> Parsed? {
        guard bytes.count >= 28, bytes[0] >> 4 == 4 else { return nil }
        let headerLength = Int(bytes[0] & 0x0f) * 4
        let totalLength = Int(bytes[2]) << 8 | Int(bytes[3])
        // Protocol 1 (ICMP), not a fragment (no MF flag, offset 0), lengths consistent.
        guard headerLength >= 20, bytes[9] == 1, totalLength <= bytes.count, totalLength >= headerLength + 8,
              bytes[6] & 0x3f == 0, bytes[7] == 0 else { return nil }
        let icmp = Array(bytes[headerLength..<totalLength])
        guard icmp[0] == 8 || icmp[0] == 0, icmp[1] == 0, checksumIsValid(icmp) else { return nil }
        return Parsed(
            isRequest: icmp[0] == 8, source: Array(bytes[12..<16]), destination: Array(bytes[16..<20]),
            identifier: UInt16(icmp[4]) << 8 | UInt16(icmp[5]), sequence: UInt16(icmp[6]) << 8 | UInt16(icmp[7]),
            payload: Array(icmp[8...]))
    }

    /// The reply a host at the request's destination sends: addresses swapped, same identifier,
    /// sequence and payload (RFC 792).
    public static func reply(to request: Parsed) -> [UInt8] {
        packet(type: 0, from: request.destination, to: request.source, identifier: request.identifier, sequence: request.sequence, payload: request.payload)
    }

    static func packet(type: UInt8, from source: [UInt8], to destination: [UInt8], identifier: UInt16, sequence: UInt16, payload: [UInt8]) -> [UInt8] {
        var icmp: [UInt8] = [type, 0, 0, 0, UInt8(identifier >> 8), UInt8(identifier & 0xff), UInt8(sequence >> 8), UInt8(sequence & 0xff)] + payload
        storeChecksum(&icmp, at: 2)
        let total = 20 + icmp.count
        var header: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 0, 0x40, 0, 64, 1, 0, 0] + source + destination
        storeChecksum(&header, at: 10)
        return header + icmp
    }

    /// Fills the checksum field at `offset` (zero before) of `bytes`.
    static func storeChecksum(_ bytes: inout [UInt8], at offset: Int) {
        bytes.withUnsafeMutableBytes { raw in
            InternetChecksum.store(InternetChecksum.sum(raw.baseAddress!, count: raw.count), into: raw.baseAddress!, at: offset)
        }
    }

    /// A region whose checksum field is filled sums to all ones (RFC 1071 §1).
    static func checksumIsValid(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { InternetChecksum.fold(InternetChecksum.sum($0.baseAddress!, count: $0.count)) == 0xffff }
    }
}
