import NetExtCore
import NetExtTestSupport
import Testing


/// RFC 1071 written the slow, obvious way: big-endian 16-bit words, end-around carry.
func referenceChecksum(_ bytes: ArraySlice<UInt8>, initial: UInt32 = 0) -> UInt16 {
    var sum = initial
    var index = bytes.startIndex
    while index < bytes.endIndex {
        let high = UInt32(bytes[index])
        let low = index + 1 < bytes.endIndex ? UInt32(bytes[index + 1]) : 0
        sum += high << 8 | low
        index += 2
    }
    while sum > 0xffff { sum = (sum & 0xffff) + (sum >> 16) }
    return ~UInt16(sum)
}

/// The pseudo-header as bytes (RFC 793 §3.1 / RFC 8200 §8.1), for the reference checksum.
func pseudoHeader(_ packet: [UInt8], isIPv6: Bool, tcpLength: Int) -> [UInt8] {
    let addresses = isIPv6 ? Array(packet[8..<40]) : Array(packet[12..<20])
    return addresses + (isIPv6 ? [0, 0, UInt8(tcpLength >> 8), UInt8(tcpLength & 0xff), 0, 0, 0, 6] : [0, 6, UInt8(tcpLength >> 8), UInt8(tcpLength & 0xff)])
}

func tcpChecksumIsValid(_ packet: [UInt8], isIPv6: Bool) -> Bool {
    let ipHeader = isIPv6 ? 40 : Int(packet[0] & 0x0f) * 4
    let bytes = pseudoHeader(packet, isIPv6: isIPv6, tcpLength: packet.count - ipHeader) + packet[ipHeader...]
    return referenceChecksum(bytes[...]) == 0
}

/// A TCP packet of the kind the kernel passes with TSO: one header, a long payload, the TCP
/// checksum field holding the pseudo-header sum.
func makeSuperPacket(isIPv6: Bool, payload: [UInt8], sequence: UInt32, flags: UInt8, options: [UInt8] = []) -> [UInt8] {
    let tcpHeaderLength = 20 + options.count
    var tcp: [UInt8] = [0x9c, 0x40, 0x14, 0x51]  // ports 40000 → 5201
    tcp += withUnsafeBytes(of: sequence.bigEndian, Array.init)
    tcp += [0, 0, 0x30, 0x39]  // ack 12345
    tcp += [UInt8(tcpHeaderLength / 4) << 4, flags, 0x01, 0xf6, 0, 0, 0, 0]
    tcp += options
    var packet: [UInt8]
    if isIPv6 {
        let length = tcp.count + payload.count
        packet = [0x60, 0, 0, 0, UInt8(length >> 8 & 0xff), UInt8(length & 0xff), 6, 64]
        packet += [0xfd, 0x99] + [UInt8](repeating: 0, count: 13) + [2]
        packet += [0xfd, 0x20] + [UInt8](repeating: 0, count: 13) + [5]
    } else {
        let length = 20 + tcp.count + payload.count
        packet = [0x45, 0, UInt8(length >> 8 & 0xff), UInt8(length & 0xff), 0x12, 0x34, 0x40, 0, 64, 6, 0, 0, 10, 99, 0, 2, 10, 20, 0, 5]
    }
    let ipHeader = packet.count
    packet += tcp + payload
    let tcpLength = packet.count - ipHeader
    let partial = ~referenceChecksum(pseudoHeader(packet, isIPv6: isIPv6, tcpLength: min(tcpLength, 0xffff))[...])
    packet[ipHeader + 16] = UInt8(partial >> 8)
    packet[ipHeader + 17] = UInt8(partial & 0xff)
    return packet
}

func splitCapturing(_ original: [UInt8], header: VirtioNetHeader, count: Int) throws -> [[UInt8]] {
    var packet = original
    let buffers = (0..<count).map { _ in UnsafeMutableRawPointer.allocate(byteCount: 65_536, alignment: 16) }
    defer { buffers.forEach { $0.deallocate() } }
    var lengths: [Int] = []
    _ = try packet.withUnsafeMutableBytes { bytes in
        try SegmentationOffload.split(bytes, header: header) { length in
            guard lengths.count < buffers.count else { return nil }
            lengths.append(length)
            return buffers[lengths.count - 1]
        }
    }
    return lengths.enumerated().map { Array(UnsafeRawBufferPointer(start: buffers[$0.offset], count: $0.element)) }
}

@Suite("Packet offloads: checksums, segmentation, coalescing")
struct PacketOffloadTests {
    @Test("the fast checksum equals RFC 1071's for any length and alignment")
    func checksumMatchesReference() {
        var random = SplitMix64(state: 1)
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<300, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let fast = bytes.withUnsafeBytes { ~InternetChecksum.fold(InternetChecksum.sum($0.baseAddress ?? UnsafeRawPointer(bitPattern: 8)!, count: count)) }
            let stored = UInt16(bigEndian: fast)  // the folded sum is in memory order
            #expect(stored == referenceChecksum(bytes[...]), "length \(count)")
        }
    }

    @Test("TCP super-packets split into MTU-sized segments with valid checksums, in order", arguments: [false, true])
    func splitsSuperPackets(isIPv6: Bool) throws {
        var random = SplitMix64(state: isIPv6 ? 7 : 3)
        for _ in 0..<60 {
            let segmentSize = Int.random(in: 536...1400, using: &random)
            let payload = (0..<Int.random(in: 1...60_000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let sequence = UInt32.random(in: 0...UInt32.max, using: &random)
            let options: [UInt8] = [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]  // NOP NOP timestamps
            let packet = makeSuperPacket(isIPv6: isIPv6, payload: payload, sequence: sequence, flags: 0x18 | 0x01, options: options)  // ACK PSH FIN
            let ipHeader = isIPv6 ? 40 : 20
            let header = VirtioNetHeader(
                flags: VirtioNetHeader.needsChecksum, gsoType: isIPv6 ? VirtioNetHeader.gsoTCPv6 : VirtioNetHeader.gsoTCPv4,
                headerLength: UInt16(ipHeader + 32), gsoSize: UInt16(segmentSize), checksumStart: UInt16(ipHeader), checksumOffset: 16)
            let expectedCount = (payload.count + segmentSize - 1) / segmentSize
            let segments = try splitCapturing(packet, header: header, count: expectedCount + 1)
            #expect(segments.count == expectedCount)
            var joined: [UInt8] = []
            for (index, segment) in segments.enumerated() {
                #expect(IPPacketInfo(segment)?.length == segment.count)
                #expect(segment.count <= ipHeader + 32 + segmentSize)
                if !isIPv6 { #expect(referenceChecksum(segment[0..<20]) == 0, "IPv4 header checksum") }
                #expect(tcpChecksumIsValid(segment, isIPv6: isIPv6), "segment \(index)")
                let seq = UInt32(segment[ipHeader + 4]) << 24 | UInt32(segment[ipHeader + 5]) << 16 | UInt32(segment[ipHeader + 6]) << 8 | UInt32(segment[ipHeader + 7])
                #expect(seq == sequence &+ UInt32(index * segmentSize))
                let flags = segment[ipHeader + 13]
                #expect(flags == (index == segments.count - 1 ? 0x19 : 0x10))
                joined += segment[(ipHeader + 32)...]
            }
            #expect(joined == payload)
        }
    }

    @Test("a packet that only needs its checksum completed gets a valid one")
    func completesChecksum() throws {
        let payload = [UInt8](repeating: 0xab, count: 333)
        let packet = makeSuperPacket(isIPv6: false, payload: payload, sequence: 1, flags: 0x18)
        let header = VirtioNetHeader(flags: VirtioNetHeader.needsChecksum, gsoType: 0, headerLength: 0, gsoSize: 0, checksumStart: 20, checksumOffset: 16)
        let segments = try splitCapturing(packet, header: header, count: 2)
        #expect(segments.count == 1)
        #expect(tcpChecksumIsValid(segments[0], isIPv6: false))
    }

    @Test("segments of one flow join into the packet they came from; the kernel's checksum completion makes it valid", arguments: [false, true])
    func coalescesSegments(isIPv6: Bool) throws {
        let payload = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let packet = makeSuperPacket(isIPv6: isIPv6, payload: payload, sequence: 1000, flags: 0x18)
        let ipHeader = isIPv6 ? 40 : 20
        let header = VirtioNetHeader(
            flags: 1, gsoType: isIPv6 ? 4 : 1, headerLength: UInt16(ipHeader + 20), gsoSize: 1380, checksumStart: UInt16(ipHeader), checksumOffset: 16)
        let segments = try splitCapturing(packet, header: header, count: 20)
        let pointers = segments.indices.map { index in
            let pointer = UnsafeMutableRawBufferPointer.allocate(byteCount: segments[index].count, alignment: 16)
            segments[index].withUnsafeBytes { pointer.copyMemory(from: $0) }
            return pointer
        }
        defer { pointers.forEach { $0.deallocate() } }
        var coalescer = TCPCoalescer()
        for pointer in pointers { coalescer.add(pointer) }
        coalescer.finish()
        #expect(coalescer.groups.count == 1)
        let group = try #require(coalescer.groups.first)
        #expect(Int(group.count) == segments.count)
        #expect(group.header.gsoSize == 1380)
        #expect(group.header.gsoType == (isIPv6 ? VirtioNetHeader.gsoTCPv6 : VirtioNetHeader.gsoTCPv4))
        // What the kernel receives: head packet, then the others' payloads.
        var joined = Array(UnsafeRawBufferPointer(pointers[0]))
        var next = Int(coalescer.next[0])
        while next >= 0 {
            joined += UnsafeRawBufferPointer(pointers[next])[(ipHeader + 20)...]
            next = Int(coalescer.next[next])
        }
        #expect(joined.count == packet.count)
        #expect(Array(joined[(ipHeader + 20)...]) == payload)
        #expect(joined[ipHeader + 13] == 0x18, "PSH from the last segment")
        if !isIPv6 { #expect(referenceChecksum(joined[0..<20]) == 0) }
        try joined.withUnsafeMutableBytes { try SegmentationOffload.completeChecksum($0, header: group.header) }
        #expect(tcpChecksumIsValid(joined, isIPv6: isIPv6))
    }

    @Test("packets that must not join stay apart, in their order")
    func keepsUnjoinablePacketsApart() {
        let first = makeSuperPacket(isIPv6: false, payload: [UInt8](repeating: 1, count: 100), sequence: 0, flags: 0x10)
        let gap = makeSuperPacket(isIPv6: false, payload: [UInt8](repeating: 2, count: 100), sequence: 150, flags: 0x10)  // not 100
        let syn = makeSuperPacket(isIPv6: false, payload: [UInt8](repeating: 3, count: 100), sequence: 250, flags: 0x02)
        var otherPort = makeSuperPacket(isIPv6: false, payload: [UInt8](repeating: 4, count: 100), sequence: 100, flags: 0x10)
        otherPort[21] ^= 1
        let udp: [UInt8] = [0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0, 53, 0, 53, 0, 8, 0, 0]
        let packets = [first, gap, syn, otherPort, udp]
        let pointers = packets.map { bytes in
            let pointer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
            bytes.withUnsafeBytes { pointer.copyMemory(from: $0) }
            return pointer
        }
        defer { pointers.forEach { $0.deallocate() } }
        var coalescer = TCPCoalescer()
        for pointer in pointers { coalescer.add(pointer) }
        coalescer.finish()
        #expect(coalescer.groups.map(\.count) == [1, 1, 1, 1, 1])
        #expect(coalescer.groups.map(\.head) == [0, 1, 2, 3, 4])
        #expect(coalescer.joined == 0)
    }

    @Test("random bytes with random offload headers are refused or split, never crash")
    func fuzzSplitAndCoalesce() {
        var random = SplitMix64(state: 99)
        let output = UnsafeMutableRawPointer.allocate(byteCount: 70_000, alignment: 16)
        defer { output.deallocate() }
        var coalescer = TCPCoalescer()
        for round in 0..<3000 {
            var bytes = (0..<Int.random(in: 0..<200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if round % 2 == 0, bytes.count > 40 {
                bytes[0] = round % 4 == 0 ? 0x45 : 0x60  // get past the version checks more often
                bytes[9] = 6
                bytes[6] = 6
            }
            let header = VirtioNetHeader(
                flags: UInt8.random(in: 0...3, using: &random), gsoType: [0, 1, 3, 4, 5, 0x81].randomElement(using: &random)!,
                headerLength: UInt16.random(in: 0...100, using: &random), gsoSize: UInt16.random(in: 0...100, using: &random),
                checksumStart: UInt16.random(in: 0...80, using: &random), checksumOffset: UInt16.random(in: 0...20, using: &random))
            var produced = 0
            bytes.withUnsafeMutableBytes { packet in
                guard !packet.isEmpty else { return }
                if let count = try? SegmentationOffload.split(packet, header: header, into: { length in length <= 70_000 ? output : nil }) {
                    produced = count
                }
            }
            #expect(produced <= 200)
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
            bytes.withUnsafeBytes { if !$0.isEmpty { copy.copyMemory(from: $0) } }
            coalescer.reset()
            coalescer.add(UnsafeMutableRawBufferPointer(rebasing: copy[..<bytes.count]))
            coalescer.add(UnsafeMutableRawBufferPointer(rebasing: copy[..<bytes.count]))
            coalescer.finish()
            copy.deallocate()
        }
    }
}
