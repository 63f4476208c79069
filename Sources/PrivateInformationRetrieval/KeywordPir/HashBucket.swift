/// One cuckoo bucket as bytes, in the layout of Apple's swift-homomorphic-encryption
/// (`HashBucket`): a slot count (1 byte), then per slot the keyword hash (8 bytes,
/// little-endian), the value's length (2 bytes, little-endian) and the value. A bucket is one
/// index-PIR entry; the zero padding after it (to the entry size) is not read.
enum HashBucket {
    /// Most slots a bucket can say it has.
    static let maximumSlots = Int(UInt8.max)
    /// Longest value a slot can carry.
    static let maximumValueSize = Int(UInt16.max)

    /// Serialized size of a bucket holding values of these sizes.
    static func size(valueSizes: some Sequence<Int>) -> Int {
        valueSizes.reduce(1) { $0 + 8 + 2 + $1 }
    }

    static func serialize(_ slots: [(hash: UInt64, value: [UInt8])]) -> [UInt8] {
        precondition(slots.count <= maximumSlots && slots.allSatisfy { $0.value.count <= maximumValueSize })
        var out: [UInt8] = [UInt8(slots.count)]
        out.reserveCapacity(size(valueSizes: slots.map(\.value.count)))
        for slot in slots {
            withUnsafeBytes(of: slot.hash.littleEndian) { out += $0 }
            withUnsafeBytes(of: UInt16(slot.value.count).littleEndian) { out += $0 }
            out += slot.value
        }
        return out
    }

    /// The slots of a serialized bucket; a bucket whose slots run past its bytes is refused
    /// with the offset at fault.
    static func parse(_ bytes: [UInt8]) throws(PirError) -> [(hash: UInt64, value: [UInt8])] {
        guard let count = bytes.first else { throw .malformedBucket("empty bucket") }
        var slots: [(hash: UInt64, value: [UInt8])] = []
        var offset = 1
        for slot in 0..<Int(count) {
            guard offset + 10 <= bytes.count else {
                throw .malformedBucket("slot \(slot) of \(count) starts at offset \(offset) but the bucket has \(bytes.count) bytes")
            }
            let hash = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
            let length = Int(bytes[offset + 8]) | Int(bytes[offset + 9]) << 8
            offset += 10
            guard offset + length <= bytes.count else {
                throw .malformedBucket("slot \(slot) value of \(length) bytes at offset \(offset) runs past the bucket's \(bytes.count) bytes")
            }
            slots.append((hash, Array(bytes[offset..<(offset + length)])))
            offset += length
        }
        return slots
    }
}
