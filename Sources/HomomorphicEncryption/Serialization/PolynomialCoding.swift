/// Polynomial bytes on the wire: coefficient form, row by row (one row per prime, in the
/// parameter set's order), each coefficient as an unsigned big-endian bit field of
/// `bitWidth(q_i) − skip` bits, fields packed most significant bit first with no padding
/// between rows; the last byte is zero-padded. With `skip > 0` the stored value is
/// `round(c / 2^skip) mod 2^width` (the low bits are dropped after rounding; a value that rounds
/// up to 2^width wraps to 0, which is within 2^(skip−1) of c modulo q; see `docs/pir-protocol.md`).
enum PolynomialCoding {
    /// Stored bits per coefficient of a row: bitWidth(q) − skip.
    static func fieldWidth(modulus q: Modulus, skip: Int) -> Int {
        max(1, q.bitWidth - skip)
    }

    /// Byte count of a polynomial over `moduli` with per-row skips.
    static func byteCount(degree: Int, moduli: [Modulus], skip: Int) -> Int {
        let bits = moduli.reduce(0) { $0 + degree * fieldWidth(modulus: $1, skip: skip) }
        return (bits + 7) / 8
    }

    static func encode(_ poly: RNSPolynomial, moduli: [Modulus], skip: Int = 0) -> [UInt8] {
        precondition(!poly.isNTT)
        var out = [UInt8]()
        out.reserveCapacity(byteCount(degree: poly.degree, moduli: Array(moduli.prefix(poly.moduliCount)), skip: skip))
        var buffer: UInt64 = 0
        var bits = 0
        let half: UInt64 = skip > 0 ? UInt64(1) << UInt64(skip - 1) : 0
        for i in 0..<poly.moduliCount {
            let width = fieldWidth(modulus: moduli[i], skip: skip)
            let mask = (UInt64(1) << UInt64(width)) - 1
            for j in 0..<poly.degree {
                let value = ((UInt64(poly.storage[i * poly.degree + j]) + half) >> UInt64(skip)) & mask
                buffer = buffer << UInt64(width) | value
                bits += width
                while bits >= 8 {
                    bits -= 8
                    out.append(UInt8(truncatingIfNeeded: buffer >> UInt64(bits)))
                }
                buffer &= (UInt64(1) << UInt64(bits)) &- 1
            }
        }
        if bits > 0 { out.append(UInt8(truncatingIfNeeded: buffer << UInt64(8 - bits))) }
        return out
    }

    /// Decodes exactly `byteCount(…)` bytes; every value must be below its prime (after
    /// restoring skipped bits, values are reduced modulo the prime).
    static func decode(
        _ bytes: some Collection<UInt8>, degree: Int, moduli: [Modulus], skip: Int = 0, what: String
    ) throws(HomomorphicEncryptionError) -> RNSPolynomial {
        let expected = byteCount(degree: degree, moduli: moduli, skip: skip)
        guard bytes.count == expected else {
            throw .malformed("\(what): \(bytes.count) bytes, expected \(expected)")
        }
        var poly = RNSPolynomial(degree: degree, moduliCount: moduli.count, isNTT: false)
        var iterator = bytes.makeIterator()
        var buffer: UInt64 = 0
        var bits = 0
        for i in 0..<moduli.count {
            let q = moduli[i]
            let width = fieldWidth(modulus: q, skip: skip)
            for j in 0..<degree {
                while bits < width {
                    buffer = buffer << 8 | UInt64(iterator.next()!)
                    bits += 8
                }
                bits -= width
                let field = buffer >> UInt64(bits)
                buffer &= (UInt64(1) << UInt64(bits)) &- 1
                if skip == 0 {
                    guard field < UInt64(q.value) else {
                        throw .malformed("\(what): coefficient \(j) of row \(i) is \(field), not below \(q.value)")
                    }
                    poly.storage[i * degree + j] = UInt32(field)
                } else {
                    poly.storage[i * degree + j] = q.reduce(field << UInt64(skip))
                }
            }
        }
        return poly
    }
}
