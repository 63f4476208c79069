/// Bytes ↔ plaintext coefficients as Apple's swift-homomorphic-encryption packs them
/// (`CoefficientPacking.bytesToCoefficients` / `coefficientsToBytes`): the bytes are one bit
/// string, most significant bit first, cut into fields of `bitsPerCoefficient` = ⌊log2 t⌋ bits;
/// a last partial field is padded with zero bits on the right.
public struct CoefficientPacking: Sendable, Hashable {
    public let bitsPerCoefficient: Int

    public init(plaintextModulus t: UInt32) {
        bitsPerCoefficient = 31 - t.leadingZeroBitCount  // ⌊log2 t⌋ for t ≥ 2
    }

    /// How many coefficients `byteCount` bytes need.
    public func coefficientCount(forBytes byteCount: Int) -> Int {
        (byteCount * 8 + bitsPerCoefficient - 1) / bitsPerCoefficient
    }

    /// How many whole bytes `coefficientCount` coefficients hold.
    public func byteCount(forCoefficients coefficientCount: Int) -> Int {
        coefficientCount * bitsPerCoefficient / 8
    }

    /// Appends the coefficients of `bytes` to `out`.
    public func pack(_ bytes: some Collection<UInt8>, into out: inout [UInt64]) {
        let width = bitsPerCoefficient
        var buffer: UInt64 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt64(byte)
            bits += 8
            while bits >= width {
                bits -= width
                out.append(buffer >> UInt64(bits))
                buffer &= (UInt64(1) << UInt64(bits)) &- 1
            }
        }
        if bits > 0 { out.append(buffer << UInt64(width - bits)) }
    }

    /// The first `byteCount` bytes of the bit string `coefficients` spell (values are masked to
    /// the field width).
    public func unpack(_ coefficients: some Collection<UInt64>, byteCount: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(byteCount)
        let width = bitsPerCoefficient
        let mask = (UInt64(1) << UInt64(width)) - 1
        var buffer: UInt64 = 0
        var bits = 0
        for c in coefficients {
            buffer = buffer << UInt64(width) | (c & mask)
            bits += width
            while bits >= 8 {
                if out.count == byteCount { return out }
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt64(bits)))
                buffer &= (UInt64(1) << UInt64(bits)) &- 1
            }
        }
        if bits > 0, out.count < byteCount { out.append(UInt8(truncatingIfNeeded: buffer << UInt64(8 - bits))) }
        return out
    }
}
