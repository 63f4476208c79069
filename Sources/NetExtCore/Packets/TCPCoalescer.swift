/// The software half of receive offload for a TUN descriptor with `IFF_VNET_HDR`: consecutive
/// in-order segments of one TCP flow from a batch are joined into one packet with a
/// `VirtioNetHeader` that lets the kernel treat them as a single segment (as its own GRO does),
/// so the receiving stack handles one 64 KiB packet instead of forty-five.
///
/// The rules follow Linux's tcp_gro_receive: same addresses, ports, IP fields, TCP header
/// (acknowledgement, window, options) apart from the sequence number; only ACK (and PSH on the
/// last segment) set; every segment but the last exactly as long as the first; the next
/// segment's sequence number follows on. Anything else is written as it is.
///
/// Usage per batch: `reset()`, `add(_:)` for each packet (the bytes must stay valid and are
/// modified in place), `finish()`, then read `groups` (each group's packet indices run from
/// `head` along `next`).
public struct TCPCoalescer {
    public struct Group {
        /// Index of the first packet (whose headers describe the whole group).
        public var head: Int32
        var tail: Int32
        /// How many packets.
        public var count: Int32
        /// The first packet's payload length: every other packet but the last has exactly this.
        var segmentSize: Int32
        /// Bytes of the joined packet (head packet plus the others' payloads).
        public var totalLength: Int32
        var nextSequence: UInt32
        var ipHeaderLength: Int16
        var tcpHeaderLength: Int16
        var isOpen: Bool
        var isIPv6: Bool
        var sawPush: Bool
        /// Filled by `finish()` for groups of more than one packet.
        public var header = VirtioNetHeader()
    }

    /// At most this many packets join one group (and the joined packet stays below 64 KiB).
    public static let maximumSegments: Int32 = 64
    /// Open groups examined for each packet.
    static let searchDepth = 8

    public private(set) var packets: [UnsafeMutableRawBufferPointer] = []
    /// For each packet, the next packet of its group (-1 at the end).
    public private(set) var next: [Int32] = []
    public private(set) var groups: [Group] = []
    /// Packets that joined a group other than as its head (measurement).
    public private(set) var joined = 0

    public init(capacity: Int = 256) {
        packets.reserveCapacity(capacity)
        next.reserveCapacity(capacity)
        groups.reserveCapacity(capacity)
    }

    public mutating func reset() {
        packets.removeAll(keepingCapacity: true)
        next.removeAll(keepingCapacity: true)
        groups.removeAll(keepingCapacity: true)
    }

    /// Offers one IP packet (exactly its bytes).
    public mutating func add(_ packet: UnsafeMutableRawBufferPointer) {
        let index = Int32(packets.count)
        packets.append(packet)
        next.append(-1)
        guard let shape = Self.shape(of: UnsafeRawBufferPointer(packet)) else {
            groups.append(Self.single(index, length: packet.count))
            return
        }
        let payload = packet.count - shape.headersLength
        // Try to extend an open group of the same flow, newest first.
        var candidate = groups.count - 1
        let lowest = max(0, groups.count - Self.searchDepth)
        while candidate >= lowest {
            if groups[candidate].isOpen, canJoin(packet, shape: shape, payload: payload, group: groups[candidate]) {
                append(index, payload: payload, flags: shape.flags, to: candidate)
                return
            }
            candidate -= 1
        }
        var group = Self.single(index, length: packet.count)
        group.isOpen = shape.flags == Self.ack && payload > 0
        group.segmentSize = Int32(payload)
        group.nextSequence = shape.sequence &+ UInt32(payload)
        group.ipHeaderLength = Int16(shape.ipHeaderLength)
        group.tcpHeaderLength = Int16(shape.headersLength - shape.ipHeaderLength)
        group.isIPv6 = shape.isIPv6
        groups.append(group)
    }

    /// Rewrites each joined group's head headers (lengths, IPv4 checksum, PSH, the TCP checksum
    /// field set to the pseudo-header sum) and fills its `header`.
    public mutating func finish() {
        for position in groups.indices where groups[position].count > 1 {
            let group = groups[position]
            let base = packets[Int(group.head)].baseAddress!
            let ipHeaderLength = Int(group.ipHeaderLength)
            let total = Int(group.totalLength)
            if group.isIPv6 {
                base.storeBytes(of: UInt16(total - 40).bigEndian, toByteOffset: 4, as: UInt16.self)
            } else {
                base.storeBytes(of: UInt16(total).bigEndian, toByteOffset: 2, as: UInt16.self)
                base.storeBytes(of: UInt16(0), toByteOffset: 10, as: UInt16.self)
                InternetChecksum.store(InternetChecksum.sum(base, count: ipHeaderLength), into: base, at: 10)
            }
            let tcp = base + ipHeaderLength
            if group.sawPush { tcp.storeBytes(of: Self.ack | Self.push, toByteOffset: 13, as: UInt8.self) }
            let pseudo = InternetChecksum.pseudoHeaderSum(
                addresses: base + (group.isIPv6 ? 8 : 12), addressBytes: group.isIPv6 ? 32 : 8, protocolNumber: 6, length: total - ipHeaderLength)
            tcp.storeBytes(of: InternetChecksum.fold(pseudo), toByteOffset: 16, as: UInt16.self)
            groups[position].header = VirtioNetHeader(
                flags: VirtioNetHeader.needsChecksum, gsoType: group.isIPv6 ? VirtioNetHeader.gsoTCPv6 : VirtioNetHeader.gsoTCPv4,
                headerLength: UInt16(ipHeaderLength + Int(group.tcpHeaderLength)), gsoSize: UInt16(group.segmentSize),
                checksumStart: UInt16(ipHeaderLength), checksumOffset: 16)
        }
    }

    // MARK: Rules

    static let ack: UInt8 = 0x10
    static let push: UInt8 = 0x08

    struct Shape {
        var isIPv6: Bool
        var ipHeaderLength: Int
        var headersLength: Int
        var sequence: UInt32
        var flags: UInt8
    }

    /// The parts of a TCP packet that coalescing reads; nil for anything that is not a plain
    /// TCP segment (IPv4 with options or fragmented, IPv6 with extension headers, not TCP).
    static func shape(of packet: UnsafeRawBufferPointer) -> Shape? {
        guard packet.count >= 40 else { return nil }
        let base = packet.baseAddress!
        let ipHeaderLength: Int
        let isIPv6: Bool
        switch base.load(as: UInt8.self) {
        case 0x45:
            guard base.load(fromByteOffset: 9, as: UInt8.self) == 6,
                  UInt16(bigEndian: base.loadUnaligned(fromByteOffset: 6, as: UInt16.self)) & 0x3fff == 0,  // not a fragment
                  Int(UInt16(bigEndian: base.loadUnaligned(fromByteOffset: 2, as: UInt16.self))) == packet.count else { return nil }
            ipHeaderLength = 20
            isIPv6 = false
        case 0x60...0x6f:
            guard packet.count >= 60, base.load(fromByteOffset: 6, as: UInt8.self) == 6,
                  Int(UInt16(bigEndian: base.loadUnaligned(fromByteOffset: 4, as: UInt16.self))) + 40 == packet.count else { return nil }
            ipHeaderLength = 40
            isIPv6 = true
        default:
            return nil
        }
        let tcpHeaderLength = Int(base.load(fromByteOffset: ipHeaderLength + 12, as: UInt8.self) >> 4) * 4
        guard tcpHeaderLength >= 20, ipHeaderLength + tcpHeaderLength <= packet.count else { return nil }
        return Shape(
            isIPv6: isIPv6, ipHeaderLength: ipHeaderLength, headersLength: ipHeaderLength + tcpHeaderLength,
            sequence: UInt32(bigEndian: base.loadUnaligned(fromByteOffset: ipHeaderLength + 4, as: UInt32.self)),
            flags: base.load(fromByteOffset: ipHeaderLength + 13, as: UInt8.self))
    }

    func canJoin(_ packet: UnsafeMutableRawBufferPointer, shape: Shape, payload: Int, group: Group) -> Bool {
        guard shape.isIPv6 == group.isIPv6, shape.ipHeaderLength == Int(group.ipHeaderLength),
              shape.headersLength - shape.ipHeaderLength == Int(group.tcpHeaderLength),
              shape.flags & ~Self.push == Self.ack, payload > 0, payload <= Int(group.segmentSize),
              shape.sequence == group.nextSequence, group.count < Self.maximumSegments,
              Int(group.totalLength) + payload <= 65_535 - (group.isIPv6 ? 40 : 0) else { return false }
        let head = UnsafeRawPointer(packets[Int(group.head)].baseAddress!)
        let other = UnsafeRawPointer(packet.baseAddress!)
        // IP: everything but length, identification and checksum (IPv4), or length (IPv6).
        if shape.isIPv6 {
            guard head.loadUnaligned(as: UInt32.self) == other.loadUnaligned(as: UInt32.self),
                  head.load(fromByteOffset: 7, as: UInt8.self) == other.load(fromByteOffset: 7, as: UInt8.self),
                  memoryEqual(head + 8, other + 8, 32) else { return false }
        } else {
            guard head.load(fromByteOffset: 1, as: UInt8.self) == other.load(fromByteOffset: 1, as: UInt8.self),
                  head.loadUnaligned(fromByteOffset: 6, as: UInt16.self) == other.loadUnaligned(fromByteOffset: 6, as: UInt16.self),
                  head.load(fromByteOffset: 8, as: UInt8.self) == other.load(fromByteOffset: 8, as: UInt8.self),
                  memoryEqual(head + 12, other + 12, 8) else { return false }
        }
        // TCP: ports, acknowledgement, data offset, window, options; flags checked above.
        let ip = shape.ipHeaderLength
        guard memoryEqual(head + ip, other + ip, 4),
              memoryEqual(head + ip + 8, other + ip + 8, 5),
              memoryEqual(head + ip + 14, other + ip + 14, 2),
              memoryEqual(head + ip + 20, other + ip + 20, Int(group.tcpHeaderLength) - 20) else { return false }
        return true
    }

    mutating func append(_ index: Int32, payload: Int, flags: UInt8, to position: Int) {
        next[Int(groups[position].tail)] = index
        groups[position].tail = index
        groups[position].count += 1
        groups[position].totalLength += Int32(payload)
        groups[position].nextSequence = groups[position].nextSequence &+ UInt32(payload)
        joined += 1
        if flags & Self.push != 0 {
            groups[position].sawPush = true
            groups[position].isOpen = false
        }
        if payload < Int(groups[position].segmentSize) || groups[position].count >= Self.maximumSegments { groups[position].isOpen = false }
    }

    static func single(_ index: Int32, length: Int) -> Group {
        Group(head: index, tail: index, count: 1, segmentSize: 0, totalLength: Int32(length), nextSequence: 0,
              ipHeaderLength: 0, tcpHeaderLength: 0, isOpen: false, isIPv6: false, sawPush: false)
    }
}

@inline(__always)
func memoryEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
    var offset = 0
    while offset + 8 <= count {
        if a.loadUnaligned(fromByteOffset: offset, as: UInt64.self) != b.loadUnaligned(fromByteOffset: offset, as: UInt64.self) { return false }
        offset += 8
    }
    while offset < count {
        if a.load(fromByteOffset: offset, as: UInt8.self) != b.load(fromByteOffset: offset, as: UInt8.self) { return false }
        offset += 1
    }
    return true
}
