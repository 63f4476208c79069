/// Samplers for the polynomials BFV draws: uniform residues, ternary secrets, and small errors.
enum Sampling {
    /// N residues uniform modulo each prime (rejection sampling, so exactly uniform), written as
    /// the rows of a polynomial. Uniform residues are uniform in either representation, so the
    /// caller decides whether they are coefficients or NTT evaluations.
    static func uniform(
        degree: Int, moduli: ArraySlice<Modulus>, isNTT: Bool, using generator: inout ChaCha20Generator
    ) -> RNSPolynomial {
        var poly = RNSPolynomial(degree: degree, moduliCount: moduli.count, isNTT: isNTT)
        let list = Array(moduli)
        poly.forEachRow { row, i in
            let q = list[i].value
            let bound = UInt32.max - UInt32.max % q  // accept r < bound: a multiple of q
            for j in 0..<row.count {
                var r = generator.nextWord()
                while r >= bound { r = generator.nextWord() }
                row[j] = r % q
            }
        }
        return poly
    }

    /// N coefficients uniform in {−1, 0, 1} (as signed values).
    static func ternary(degree: Int, using generator: inout ChaCha20Generator) -> [Int8] {
        var out = [Int8](repeating: 0, count: degree)
        var j = 0
        while j < degree {
            var w = generator.nextWord()
            for _ in 0..<4 where j < degree {
                let byte = w & 0xFF
                w >>= 8
                // 255 = 3·85: reject 255 so the byte is uniform modulo 3 (rejection depends only
                // on the discarded byte, never on the sampled value).
                if byte == 255 { continue }
                out[j] = Int8(byte % 3) - 1
                j += 1
            }
        }
        return out
    }

    /// Centered-binomial parameter: the difference of two 21-bit popcounts has variance 10.5
    /// (σ ≈ 3.24), matching the σ = 3.2 of the Homomorphic Encryption Standard.
    static let binomialBits = 21

    /// N small errors from the centered binomial distribution, computed without branches.
    static func centeredBinomial(degree: Int, using generator: inout ChaCha20Generator) -> [Int8] {
        let mask: UInt32 = (1 << UInt32(binomialBits)) - 1
        var out = [Int8](repeating: 0, count: degree)
        for j in 0..<degree {
            let a = generator.nextWord() & mask
            let b = generator.nextWord() & mask
            out[j] = Int8(a.nonzeroBitCount - b.nonzeroBitCount)
        }
        return out
    }

    /// Lifts small signed coefficients into every prime's row (coefficient form).
    static func lift(_ small: [Int8], moduli: ArraySlice<Modulus>) -> RNSPolynomial {
        var poly = RNSPolynomial(degree: small.count, moduliCount: moduli.count, isNTT: false)
        let list = Array(moduli)
        poly.forEachRow { row, i in
            let q = list[i].value
            for j in 0..<row.count {
                let v = Int32(small[j])
                // v + q when negative, without branching on the secret sign.
                let mask = UInt32(bitPattern: v >> 31)
                row[j] = UInt32(bitPattern: v) &+ (q & mask)
            }
        }
        return poly
    }
}
