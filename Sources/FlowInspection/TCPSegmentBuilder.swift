import NetExtCore

/// Builds the TCP segments netextd injects when it answers a blocked HTTP request itself: the
/// block page to the client, as if from the server, and a reset to the server, as if from the
/// client (RFC 9293 §3.1 header, §3.5.3 resets; IPv4 RFC 791, IPv6 RFC 8200; checksums with the
/// pseudo-header). Pure: returns whole IP packets.
public enum TCPSegmentBuilder {
    /// The largest payload per injected segment (fits any link of MTU 1280 and up).
    public static let maximumPayload = 1_200

    /// The response segments to the client for `request` (the client's last request segment):
    /// they continue the server's sequence at the request's acknowledgement number and
    /// acknowledge the request; the last one carries FIN.
    public static func response(to request: FlowPacket, payload: [UInt8]) -> [[UInt8]] {
        var segments: [[UInt8]] = []
        var offset = 0
        let acknowledgement = request.sequenceNumber &+ UInt32(request.payloadLength)
        repeat {
            let chunk = Array(payload[offset..<min(offset + maximumPayload, payload.count)])
            let isLast = offset + chunk.count >= payload.count
            segments.append(segment(
                source: request.destination, destination: request.source, sourcePort: request.destinationPort, destinationPort: request.sourcePort,
                sequence: request.acknowledgementNumber &+ UInt32(offset), acknowledgement: acknowledgement,
                flags: 0x10 | 0x08 | (isLast ? FlowPacket.fin : 0), payload: chunk))
            offset += chunk.count
        } while offset < payload.count
        return segments
    }

    /// A reset to the server for `request`: from the client, at the sequence number the server
    /// expects next (the request itself never reached it).
    public static func resetToServer(for request: FlowPacket) -> [UInt8] {
        segment(
            source: request.source, destination: request.destination, sourcePort: request.sourcePort, destinationPort: request.destinationPort,
            sequence: request.sequenceNumber, acknowledgement: 0, flags: FlowPacket.rst, payload: [])
    }

    /// A reset to the program on this machine, as if from the remote end, at `sequence` (what the
    /// program expects next): ends a connection whose remote data netextd held and dropped.
    public static func resetToProgram(of flow: FilterFlow, sequence: UInt32) -> [UInt8]? {
        guard let local = IPPrefix.parseAddress(flow.localAddress), let remote = IPPrefix.parseAddress(flow.remoteAddress),
              local.count == remote.count else { return nil }
        return segment(
            source: remote, destination: local, sourcePort: flow.remotePort, destinationPort: flow.localPort,
            sequence: sequence, acknowledgement: 0, flags: FlowPacket.rst, payload: [])
    }

    /// One IP packet with a TCP header of 20 bytes (no options), window 65535.
    public static func segment(
        source: [UInt8], destination: [UInt8], sourcePort: UInt16, destinationPort: UInt16,
        sequence: UInt32, acknowledgement: UInt32, flags: UInt8, payload: [UInt8]
    ) -> [UInt8] {
        let isIPv6 = source.count == 16
        let tcpLength = 20 + payload.count
        var packet: [UInt8]
        if isIPv6 {
            packet = [0x60, 0, 0, 0, UInt8(tcpLength >> 8), UInt8(tcpLength & 0xff), 6, 64] + source + destination
        } else {
            let total = 20 + tcpLength
            packet = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 0, 0x40, 0, 64, 6, 0, 0] + source + destination
            packet.withUnsafeMutableBytes { bytes in
                InternetChecksum.store(InternetChecksum.sum(bytes.baseAddress!, count: 20), into: bytes.baseAddress!, at: 10)
            }
        }
        let tcpStart = packet.count
        func be32(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)] }
        packet += [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xff), UInt8(destinationPort >> 8), UInt8(destinationPort & 0xff)]
        packet += be32(sequence) + be32(acknowledgement)
        packet += [0x50, flags, 0xff, 0xff, 0, 0, 0, 0]
        packet += payload
        packet.withUnsafeMutableBytes { bytes in
            let base = bytes.baseAddress!
            let addresses = base + (isIPv6 ? 8 : 12)
            var sum = InternetChecksum.pseudoHeaderSum(addresses: addresses, addressBytes: isIPv6 ? 32 : 8, protocolNumber: 6, length: tcpLength)
            sum = InternetChecksum.sum(base + tcpStart, count: tcpLength, initial: sum)
            InternetChecksum.store(sum, into: base, at: tcpStart + 16)
        }
        return packet
    }
}
