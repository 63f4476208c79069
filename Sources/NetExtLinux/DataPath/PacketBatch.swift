/// Packet memory for one data-plane thread, allocated once and reused for every batch: `capacity`
/// slots of `slotSize` bytes. Each packet sits `headroom` bytes into its slot, so a tunnel header
/// can be written in front of it and the packet sealed where it lies; the slot also leaves room
/// behind the packet for padding and an authentication tag.
public final class PacketBatch {
    public let capacity: Int
    public let slotSize: Int
    public let headroom: Int
    /// The largest packet a slot holds.
    public let maximumPacket: Int
    let storage: UnsafeMutableRawPointer
    let lengths: UnsafeMutablePointer<Int>
    /// Packets in the batch.
    public internal(set) var count = 0

    public init(capacity: Int, maximumPacket: Int, headroom: Int, tailroom: Int) {
        self.capacity = capacity
        self.headroom = headroom
        self.maximumPacket = maximumPacket
        slotSize = (headroom + maximumPacket + tailroom + 63) & ~63
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity * slotSize, alignment: 64)
        lengths = .allocate(capacity: capacity)
        lengths.initialize(repeating: 0, count: capacity)
    }

    deinit {
        storage.deallocate()
        lengths.deallocate()
    }

    public var freeSlots: Int { capacity - count }

    public func removeAll() { count = 0 }

    /// The next slot's packet memory for a packet of `length` bytes, or nil if the batch is full
    /// or the packet too large.
    @inline(__always)
    public func append(length: Int) -> UnsafeMutableRawPointer? {
        guard count < capacity, length <= maximumPacket else { return nil }
        lengths[count] = length
        count += 1
        return storage + (count - 1) * slotSize + headroom
    }

    /// The whole slot of packet `index` (headroom, packet, tailroom).
    @inline(__always)
    public func slot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + index * slotSize, count: slotSize)
    }

    /// Packet `index`'s bytes.
    @inline(__always)
    public func packet(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + index * slotSize + headroom, count: lengths[index])
    }

    /// The length of packet `index`.
    @inline(__always)
    public func length(_ index: Int) -> Int { lengths[index] }
}
