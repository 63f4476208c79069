import NetExtCore

/// IP packets for the connect-ip tests: ICMP echo requests and replies (RFC 792) in IPv4
/// (RFC 791), UDP in IPv6 (RFC 8200), with their checksums.
enum ConnectIPPackets {
    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        InternetChecksum.fold(bytes.withUnsafeBytes { InternetChecksum.sum($0.baseAddress!, count: $0.count) })
    }

    /// An IPv4 packet carrying ICMP `type` (8: echo request, 0: echo reply) with `payload`.
    static func icmp(type: UInt8 = 8, from source: [UInt8], to destination: [UInt8], sequence: UInt16 = 1, payload: [UInt8] = Array("ping".utf8)) -> [UInt8] {
        var icmp: [UInt8] = [type, 0, 0, 0, 0x4E, 0x58, UInt8(sequence >> 8), UInt8(sequence & 0xff)] + payload
        let icmpSum = checksum(icmp[...])
        icmp[2] = UInt8(icmpSum >> 8)
        icmp[3] = UInt8(icmpSum & 0xff)
        let total = 20 + icmp.count
        var header: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 0, 0x40, 0, 64, 1, 0, 0] + source + destination
        let headerSum = checksum(header[...])
        header[10] = UInt8(headerSum >> 8)
        header[11] = UInt8(headerSum & 0xff)
        return header + icmp
    }

    /// The echo reply a host would send to `request` (addresses swapped, type 0), or nil when it
    /// is no ICMP echo request.
    static func echoReply(to request: [UInt8]) -> [UInt8]? {
        guard request.count >= 28, request[0] == 0x45, request[9] == 1, request[20] == 8 else { return nil }
        return icmp(type: 0, from: Array(request[16..<20]), to: Array(request[12..<16]),
                    sequence: UInt16(request[26]) << 8 | UInt16(request[27]), payload: Array(request[28...]))
    }

    /// An IPv6 packet carrying a UDP datagram (checksum left 0: nothing here reads it).
    static func udp6(from source: [UInt8], to destination: [UInt8], payload: [UInt8] = Array("hello".utf8)) -> [UInt8] {
        let length = 8 + payload.count
        let udp: [UInt8] = [0x30, 0x39, 0x00, 0x35, UInt8(length >> 8), UInt8(length & 0xff), 0, 0] + payload
        return [0x60, 0, 0, 0, UInt8(length >> 8), UInt8(length & 0xff), 17, 64] + source + destination + udp
    }
}
