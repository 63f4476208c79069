/// 32-bit FNV-1a (Fowler–Noll–Vo; offset basis 0x811c9dc5, prime 0x01000193), the first hash of
/// Apple's URL filter prefilter.
public enum FNV1a {
    public static let offsetBasis: UInt32 = 0x811c_9dc5
    public static let prime: UInt32 = 0x0100_0193

    @inlinable
    public static func hash32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var hash = offsetBasis
        for byte in bytes {
            hash ^= UInt32(byte)
            hash &*= prime
        }
        return hash
    }

    public static func hash32(_ text: String) -> UInt32 {
        var copy = text
        return copy.withUTF8 { hash32(UnsafeRawBufferPointer($0)) }
    }
}
