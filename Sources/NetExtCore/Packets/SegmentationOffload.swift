/// Turns what a TUN descriptor with offloads returns — one packet after a `VirtioNetHeader`,
/// possibly a TCP "super-packet" of up to 64 KiB with a partial checksum — into ordinary IP
/// packets no larger than the interface's MTU, each with complete checksums. This is the
/// software half of TCP segmentation offload (RFC 9293 §3.1 header, RFC 791 / RFC 8200 fields).
public enum SegmentationOffload {
    /// Splits `packet` as `header` describes. `destination(length)` returns where to write the
    /// next output packet of `length` bytes (nil stops early: no room). Returns how many packets
    /// were written.
    @inlinable
    public static func split(
        _ packet: UnsafeMutableRawBufferPointer, header: VirtioNetHeader,
        into destination: (Int) -> UnsafeMutableRawPointer?
    ) throws(PacketOffloadError) -> Int {
        let gsoType = header.gsoType & ~VirtioNetHeader.gsoECN
        if gsoType == VirtioNetHeader.gsoNone {
            if header.flags & VirtioNetHeader.needsChecksum != 0 { try completeChecksum(packet, header: header) }
            guard let output = destination(packet.count) else { return 0 }
            output.copyMemory(from: packet.baseAddress!, byteCount: packet.count)
            return 1
        }
        guard gsoType == VirtioNetHeader.gsoTCPv4 || gsoType == VirtioNetHeader.gsoTCPv6 else {
            throw .unsupportedSegmentation(gsoType: header.gsoType)
        }
        return try splitTCP(packet, header: header, isIPv6: gsoType == VirtioNetHeader.gsoTCPv6, into: destination)
    }

    /// Completes a partial checksum: the field at `checksumStart + checksumOffset` holds the
    /// pseudo-header sum; the sum from `checksumStart` to the end replaces it.
    @inlinable
    public static func completeChecksum(_ packet: UnsafeMutableRawBufferPointer, header: VirtioNetHeader) throws(PacketOffloadError) {
        let start = Int(header.checksumStart)
        let field = start + Int(header.checksumOffset)
        guard field + 2 <= packet.count, start < packet.count else {
            throw .inconsistentHeader("checksum at \(start)+\(header.checksumOffset) in \(packet.count) bytes")
        }
        let base = packet.baseAddress!
        let isUDP = header.checksumOffset == 6
        let sum = InternetChecksum.sum(base + start, count: packet.count - start)
        InternetChecksum.store(sum, into: base, at: field, zeroAsAllOnes: isUDP)
    }

    @inlinable
    static func splitTCP(
        _ packet: UnsafeMutableRawBufferPointer, header: VirtioNetHeader, isIPv6: Bool,
        into destination: (Int) -> UnsafeMutableRawPointer?
    ) throws(PacketOffloadError) -> Int {
        let base = packet.baseAddress!
        let count = packet.count
        guard count >= (isIPv6 ? 60 : 40) else { throw .truncated(length: count) }
        let version = base.load(as: UInt8.self) >> 4
        let ipHeaderLength: Int
        if isIPv6 {
            guard version == 6 else { throw .inconsistentHeader("TCPv6 segmentation of an IPv\(version) packet") }
            guard base.load(fromByteOffset: 6, as: UInt8.self) == 6, header.checksumStart == 40 else {
                throw .inconsistentHeader("IPv6 extension headers before TCP")
            }
            ipHeaderLength = 40
        } else {
            guard version == 4 else { throw .inconsistentHeader("TCPv4 segmentation of an IPv\(version) packet") }
            ipHeaderLength = Int(base.load(as: UInt8.self) & 0x0f) * 4
            guard ipHeaderLength >= 20, base.load(fromByteOffset: 9, as: UInt8.self) == 6, Int(header.checksumStart) == ipHeaderLength else {
                throw .inconsistentHeader("IPv4 header length or protocol")
            }
        }
        let tcpHeaderLength = Int(base.load(fromByteOffset: ipHeaderLength + 12, as: UInt8.self) >> 4) * 4
        let headersLength = ipHeaderLength + tcpHeaderLength
        guard tcpHeaderLength >= 20, headersLength <= count else { throw .truncated(length: count) }
        let segmentSize = Int(header.gsoSize)
        guard segmentSize > 0 else { throw .inconsistentHeader("segment size 0") }
        let payloadLength = count - headersLength
        let segments = max(1, (payloadLength + segmentSize - 1) / segmentSize)
        let firstSequence = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: ipHeaderLength + 4, as: UInt32.self))
        let firstIdentification = UInt16(bigEndian: base.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
        let flags = base.load(fromByteOffset: ipHeaderLength + 13, as: UInt8.self)
        let addressOffset = isIPv6 ? 8 : 12
        let addressBytes = isIPv6 ? 32 : 8

        var written = 0
        for index in 0..<segments {
            let payloadStart = headersLength + index * segmentSize
            let chunk = min(segmentSize, count - payloadStart)
            let length = headersLength + chunk
            guard let output = destination(length) else { return written }
            output.copyMemory(from: base, byteCount: headersLength)
            (output + headersLength).copyMemory(from: base + payloadStart, byteCount: chunk)
            if isIPv6 {
                output.storeBytes(of: UInt16(length - 40).bigEndian, toByteOffset: 4, as: UInt16.self)
            } else {
                output.storeBytes(of: UInt16(length).bigEndian, toByteOffset: 2, as: UInt16.self)
                output.storeBytes(of: (firstIdentification &+ UInt16(truncatingIfNeeded: index)).bigEndian, toByteOffset: 4, as: UInt16.self)
                output.storeBytes(of: UInt16(0), toByteOffset: 10, as: UInt16.self)
                InternetChecksum.store(InternetChecksum.sum(output, count: ipHeaderLength), into: output, at: 10)
            }
            let tcp = output + ipHeaderLength
            tcp.storeBytes(of: (firstSequence &+ UInt32(truncatingIfNeeded: index * segmentSize)).bigEndian, toByteOffset: 4, as: UInt32.self)
            var segmentFlags = flags
            if index != segments - 1 { segmentFlags &= ~(0x01 | 0x08) }  // FIN and PSH only on the last
            if index != 0 { segmentFlags &= ~0x80 }  // CWR only on the first
            tcp.storeBytes(of: segmentFlags, toByteOffset: 13, as: UInt8.self)
            tcp.storeBytes(of: UInt16(0), toByteOffset: 16, as: UInt16.self)
            var sum = InternetChecksum.pseudoHeaderSum(addresses: output + addressOffset, addressBytes: addressBytes, protocolNumber: 6, length: length - ipHeaderLength)
            sum = InternetChecksum.sum(tcp, count: length - ipHeaderLength, initial: sum)
            InternetChecksum.store(sum, into: tcp, at: 16)
            written += 1
        }
        return written
    }
}
