/// Polynomial bytes on the wire, as Apple's swift-homomorphic-encryption lays them out
/// (`PolyRq.serialize`, its `DataFormats` article): row by row (one row per prime, in the
/// parameter set's order), each coefficient an unsigned big-endian bit field of
/// `bitWidth(q_i) − skip` bits, fields packed most significant bit first; each row ends on a
/// byte boundary (zero bits pad its last byte). With `skip > 0` the field holds ⌊c / 2^skip⌋ —
/// the low bits are dropped, so the value read back, ⌊c / 2^skip⌋·2^skip, is never above c and
/// always below q. Whether the residues are coefficients or NTT evaluations is the caller's
/// convention (seeded key ciphertexts carry evaluations; see `docs/pir-protocol.md`).
enum PolynomialCoding {
    /// Stored bits per coefficient of a row: bitWidth(q) − skip.
    static func fieldWidth(modulus q: Modulus, skip: Int) -> Int {
        max(1, q.bitWidth - skip)
    }

    /// Bytes of one row.
    static func rowByteCount(degree: Int, modulus: Modulus, skip: Int) -> Int {
        (degree * fieldWidth(modulus: modulus, skip: skip) + 7) / 8
    }

    /// Byte count of a polynomial over `moduli`.
    static func byteCount(degree: Int, moduli: [Modulus], skip: Int) -> Int {
        moduli.reduce(0) { $0 + rowByteCount(degree: degree, modulus: $1, skip: skip) }
    }

    /// The rows of `poly` as stored (coefficients or evaluations alike).
    static func encode(_ poly: RNSPolynomial, moduli: [Modulus], skip: Int = 0) -> [UInt8] {
        precondition(skip == 0 || !poly.isNTT, "low bits are dropped only from coefficients")
        var out = [UInt8]()
        out.reserveCapacity(byteCount(degree: poly.degree, moduli: Array(moduli.prefix(poly.moduliCount)), skip: skip))
        for i in 0..<poly.moduliCount {
            var buffer: UInt64 = 0
            var bits = 0
            let width = fieldWidth(modulus: moduli[i], skip: skip)
            for j in 0..<poly.degree {
                let value = UInt64(poly.storage[i * poly.degree + j]) >> UInt64(skip)
                buffer = buffer << UInt64(width) | value
                bits += width
                while bits >= 8 {
                    bits -= 8
                    out.append(UInt8(truncatingIfNeeded: buffer >> UInt64(bits)))
                }
                buffer &= (UInt64(1) << UInt64(bits)) &- 1
            }
            if bits > 0 { out.append(UInt8(truncatingIfNeeded: buffer << UInt64(8 - bits))) }
        }
        return out
    }

    /// Decodes exactly `byteCount(…)` bytes into rows marked `isNTT`; every value must be below
    /// its prime (after restoring skipped bits, values are reduced modulo the prime).
    static func decode(
        _ bytes: some Collection<UInt8>, degree: Int, moduli: [Modulus], skip: Int = 0, isNTT: Bool = false, what: String
    ) throws(HomomorphicEncryptionError) -> RNSPolynomial {
        let expected = byteCount(degree: degree, moduli: moduli, skip: skip)
        guard bytes.count == expected else {
            throw .malformed("\(what): \(bytes.count) bytes, expected \(expected)")
        }
        var poly = RNSPolynomial(degree: degree, moduliCount: moduli.count, isNTT: isNTT)
        var iterator = bytes.makeIterator()
        for i in 0..<moduli.count {
            // Each row starts on a byte boundary: the previous row's padding bits are dropped.
            var buffer: UInt64 = 0
            var bits = 0
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
