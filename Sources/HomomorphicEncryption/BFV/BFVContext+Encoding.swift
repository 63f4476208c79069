extension BFVContext {
    /// Coefficient encoding: value i becomes the coefficient of X^i (missing ones are zero).
    public func encode(coefficients values: [UInt64]) throws(HomomorphicEncryptionError) -> Plaintext {
        guard values.count <= degree else { throw .wrongCoefficientCount(got: values.count, expected: degree) }
        var out = [UInt32](repeating: 0, count: degree)
        for (i, v) in values.enumerated() {
            guard v < UInt64(plaintextModulus.value) else {
                throw .plaintextOutOfRange(index: i, value: v, plaintextModulus: UInt64(plaintextModulus.value))
            }
            out[i] = UInt32(v)
        }
        return Plaintext(coefficients: out)
    }

    /// The coefficients of a plaintext.
    public func decodeCoefficients(_ plaintext: Plaintext) -> [UInt64] {
        plaintext.coefficients.map(UInt64.init)
    }

    /// SIMD ("batch") encoding: N slots arranged as 2 rows of N/2, so that plaintext products
    /// multiply slot by slot and the Galois element 3^k rotates both rows by k (element 2N−1
    /// swaps the rows). Needs t prime with t ≡ 1 (mod 2N). The slot order follows the powers
    /// of the generator 3 modulo 2N (Smart–Vercauteren; the layout SEAL and Apple use).
    public func encode(simd values: [UInt64]) throws(HomomorphicEncryptionError) -> Plaintext {
        guard let transform = plaintextTransform else {
            throw .unsupportedEncoding("SIMD needs a prime t ≡ 1 mod \(2 * degree); t = \(plaintextModulus.value)")
        }
        guard values.count <= degree else { throw .wrongCoefficientCount(got: values.count, expected: degree) }
        var evaluations = [UInt32](repeating: 0, count: degree)
        let map = simdIndexMap
        for (i, v) in values.enumerated() {
            guard v < UInt64(plaintextModulus.value) else {
                throw .plaintextOutOfRange(index: i, value: v, plaintextModulus: UInt64(plaintextModulus.value))
            }
            evaluations[map[i]] = UInt32(v)
        }
        evaluations.withUnsafeMutableBufferPointer { transform.inverse($0) }
        return Plaintext(coefficients: evaluations)
    }

    /// The slot values of a SIMD-encoded plaintext.
    public func decodeSIMD(_ plaintext: Plaintext) throws(HomomorphicEncryptionError) -> [UInt64] {
        guard let transform = plaintextTransform else {
            throw .unsupportedEncoding("SIMD needs a prime t ≡ 1 mod \(2 * degree); t = \(plaintextModulus.value)")
        }
        var evaluations = plaintext.coefficients
        evaluations.withUnsafeMutableBufferPointer { transform.forward($0) }
        return simdIndexMap.map { UInt64(evaluations[$0]) }
    }

    /// Slot i lives at NTT position simdIndexMap[i]: the evaluation at ψ^(3^i) for the first
    /// row and at ψ^(−3^i) for the second, in the transform's bit-reversed order.
    var simdIndexMap: [Int] {
        let n = degree, half = degree / 2, twoN = 2 * degree
        let logN = n.trailingZeroBitCount
        var map = [Int](repeating: 0, count: n)
        var power = 1
        for i in 0..<half {
            map[i] = NTT.bitReverse((power - 1) / 2, bits: logN)
            map[half + i] = NTT.bitReverse((twoN - power - 1) / 2, bits: logN)
            power = power * 3 % twoN
        }
        return map
    }

    /// Lifts a plaintext to NTT form over `level` primes with centered coefficients, for
    /// repeated products with ciphertexts at that level.
    public func prepare(_ plaintext: Plaintext, level: Int? = nil) -> PreparedPlaintext {
        let count = level ?? maximumLevel
        let t = plaintextModulus.value
        let half = t / 2
        var poly = RNSPolynomial(degree: degree, moduliCount: count, isNTT: false)
        let m = plaintext.coefficients
        poly.forEachRow { row, i in
            let q = moduli[i].value
            for j in 0..<row.count {
                let v = m[j]
                row[j] = v > half ? q &- (t &- v) : v
            }
        }
        poly.forwardNTT(transforms)
        return PreparedPlaintext(poly: poly)
    }
}
