/// Samplers for the polynomials BFV draws: uniform residues, ternary secrets, and small errors.
enum Sampling {
    /// N residues per prime drawn from a seed's stream as Apple's library draws them
    /// (`PolyRq.randomizeUniform`): row by row in the parameter set's prime order, in runs of
    /// min(N, 1024) coefficients, each run taking 16·run bytes at once; every coefficient is the
    /// 16-byte little-endian integer r reduced modulo q (bias below 2^−98 for q < 2^30, NIST
    /// SP 800-90A Rev. 1 §A.5.3). Uniform residues are uniform in either representation, so the
    /// caller decides whether they are coefficients or NTT evaluations (seeded ciphertexts and
    /// keys use NTT evaluations, in ``NTT``'s order).
    static func uniform(
        degree: Int, moduli: ArraySlice<Modulus>, isNTT: Bool, from stream: inout SeedStream
    ) -> RNSPolynomial {
        var poly = RNSPolynomial(degree: degree, moduliCount: moduli.count, isNTT: isNTT)
        let list = Array(moduli)
        let run = min(degree, 1024)
        poly.forEachRow { row, i in
            let q = list[i]
            // 2^64 mod q, so r = high·2^64 + low reduces as ((high mod q)·(2^64 mod q) + low mod q)
            // mod q — each step a Barrett reduction of a value below 2^64.
            let twoTo64 = UInt64((UInt64.max % UInt64(q.value) + 1) % UInt64(q.value))
            for start in stride(from: 0, to: row.count, by: run) {
                let bytes = stream.next(16 * run)
                bytes.withUnsafeBytes { raw in
                    for k in 0..<run {
                        let low = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 16 * k, as: UInt64.self))
                        let high = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 16 * k + 8, as: UInt64.self))
                        row[start + k] = q.reduce(UInt64(q.reduce(high)) * twoTo64 + UInt64(q.reduce(low)))
                    }
                }
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
