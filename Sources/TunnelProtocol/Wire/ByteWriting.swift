/// Big-endian integer reading and writing on byte arrays (network order throughout the protocol,
/// except the Noise nonce, which Noise defines as little-endian).
extension Array where Element == UInt8 {
    mutating func appendBigEndian(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 24))
        append(UInt8(truncatingIfNeeded: value >> 16))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendBigEndian(_ value: UInt64) {
        appendBigEndian(UInt32(truncatingIfNeeded: value >> 32))
        appendBigEndian(UInt32(truncatingIfNeeded: value))
    }
}

extension RandomAccessCollection where Element == UInt8, Index == Int {
    /// The big-endian 32-bit integer at `offset` (message indices, lengths).
    public func readBigEndianUInt32(at offset: Int) -> UInt32 {
        let base = startIndex + offset
        return UInt32(self[base]) << 24 | UInt32(self[base + 1]) << 16 | UInt32(self[base + 2]) << 8 | UInt32(self[base + 3])
    }

    func readBigEndianUInt64(at offset: Int) -> UInt64 {
        UInt64(readBigEndianUInt32(at: offset)) << 32 | UInt64(readBigEndianUInt32(at: offset + 4))
    }

    func bytes(at offset: Int, count: Int) -> [UInt8] {
        Array(self[(startIndex + offset)..<(startIndex + offset + count)])
    }
}
