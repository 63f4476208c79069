/// MurmurHash3_x86_32 (Austin Appleby's public-domain reference, `MurmurHash3.cpp`), the second
/// hash of Apple's URL filter prefilter, seeded with the prefilter's `murmurSeed`.
public enum MurmurHash3 {
    @inlinable
    public static func x86_32(_ bytes: UnsafeRawBufferPointer, seed: UInt32) -> UInt32 {
        let c1: UInt32 = 0xcc9e_2d51
        let c2: UInt32 = 0x1b87_3593
        var hash = seed
        let count = bytes.count
        let blocks = count / 4
        for block in 0..<blocks {
            // Blocks are read little-endian, as the reference does on x86.
            var k = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4 * block, as: UInt32.self))
            k &*= c1
            k = (k << 15) | (k >> 17)
            k &*= c2
            hash ^= k
            hash = (hash << 13) | (hash >> 19)
            hash = hash &* 5 &+ 0xe654_6b64
        }
        var k: UInt32 = 0
        let tail = 4 * blocks
        switch count & 3 {
        case 3:
            k ^= UInt32(bytes[tail + 2]) << 16
            fallthrough
        case 2:
            k ^= UInt32(bytes[tail + 1]) << 8
            fallthrough
        case 1:
            k ^= UInt32(bytes[tail])
            k &*= c1
            k = (k << 15) | (k >> 17)
            k &*= c2
            hash ^= k
        default:
            break
        }
        hash ^= UInt32(truncatingIfNeeded: count)
        hash ^= hash >> 16
        hash &*= 0x85eb_ca6b
        hash ^= hash >> 13
        hash &*= 0xc2b2_ae35
        hash ^= hash >> 16
        return hash
    }

    public static func x86_32(_ text: String, seed: UInt32) -> UInt32 {
        var copy = text
        return copy.withUTF8 { x86_32(UnsafeRawBufferPointer($0), seed: seed) }
    }
}
