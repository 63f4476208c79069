/// Bytes ↔ plaintext coefficients: each coefficient carries `bitsPerCoefficient` bits
/// (⌊log2 t⌋), bytes are read least significant bit first.
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
        var buffer: UInt64 = 0
        var bits = 0
        let mask = (UInt64(1) << UInt64(bitsPerCoefficient)) - 1
        for byte in bytes {
            buffer |= UInt64(byte) << UInt64(bits)
            bits += 8
            while bits >= bitsPerCoefficient {
                out.append(buffer & mask)
                buffer >>= UInt64(bitsPerCoefficient)
                bits -= bitsPerCoefficient
            }
        }
        if bits > 0 { out.append(buffer & mask) }
    }

    /// `byteCount` bytes read from `coefficients` (values are masked to the coefficient width).
    public func unpack(_ coefficients: some Collection<UInt64>, byteCount: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(byteCount)
        var buffer: UInt64 = 0
        var bits = 0
        let mask = (UInt64(1) << UInt64(bitsPerCoefficient)) - 1
        for c in coefficients {
            buffer |= (c & mask) << UInt64(bits)
            bits += bitsPerCoefficient
            while bits >= 8 {
                if out.count == byteCount { return out }
                out.append(UInt8(truncatingIfNeeded: buffer))
                buffer >>= 8
                bits -= 8
            }
        }
        return out
    }
}
