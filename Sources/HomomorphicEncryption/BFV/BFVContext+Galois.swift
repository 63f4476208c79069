extension BFVContext {
    /// Checks a Galois element: odd and below 2N.
    func validateGaloisElement(_ element: Int) throws(HomomorphicEncryptionError) {
        guard element > 0, element < 2 * degree, element & 1 == 1 else {
            throw .invalidGaloisElement(element: element, degree: degree)
        }
    }

    /// The Galois element that rotates SIMD rows left by `step` (3^step mod 2N; negative steps
    /// rotate right).
    public func galoisElement(rotatingColumnsBy step: Int) -> Int {
        let half = degree / 2
        let k = ((step % half) + half) % half
        var element = 1
        for _ in 0..<k { element = element * 3 % (2 * degree) }
        return element
    }

    /// The Galois element that swaps the two SIMD rows (X ↦ X^(2N−1)).
    public var galoisElementSwappingRows: Int { 2 * degree - 1 }

    /// X ↦ X^k on coefficients: coefficient i moves to i·k mod 2N, negated past N.
    func applyAutomorphismToCoefficients(_ poly: RNSPolynomial, element k: Int) -> RNSPolynomial {
        precondition(!poly.isNTT)
        var out = poly
        let n = degree, mask = 2 * degree - 1
        out.forEachRow { row, r in
            let q = moduli[r]
            let base = r * n
            poly.storage.withUnsafeBufferPointer { input in
                for i in 0..<n {
                    let target = (i * k) & mask
                    let v = input[base + i]
                    if target < n { row[target] = v } else { row[target - n] = q.negate(v) }
                }
            }
        }
        return out
    }

    /// X ↦ X^k on NTT evaluations, a pure permutation: position j holds the evaluation at
    /// ψ^(2·rev(j)+1), and σ_k(a)(ψ^e) = a(ψ^(e·k)).
    func applyAutomorphismToEvaluations(_ poly: RNSPolynomial, element k: Int) -> RNSPolynomial {
        precondition(poly.isNTT)
        let permutation = automorphismPermutation(element: k)
        var out = poly
        let n = degree
        out.forEachRow { row, r in
            let base = r * n
            poly.storage.withUnsafeBufferPointer { input in
                for j in 0..<n { row[j] = input[base + permutation[j]] }
            }
        }
        return out
    }

    func automorphismPermutation(element k: Int) -> [Int] {
        if let cached = permutationCache.withLock({ $0[k] }) { return cached }
        let permutation = computeAutomorphismPermutation(element: k)
        permutationCache.withLock { $0[k] = permutation }
        return permutation
    }

    func computeAutomorphismPermutation(element k: Int) -> [Int] {
        let n = degree, logN = degree.trailingZeroBitCount, mask = 2 * degree - 1
        return (0..<n).map { j in
            let exponent = 2 * NTT.bitReverse(j, bits: logN) + 1
            let image = (exponent * k) & mask
            return NTT.bitReverse((image - 1) / 2, bits: logN)
        }
    }

    /// Applies X ↦ X^k to the plaintext inside a ciphertext, switching the result back to s
    /// with the Galois key for k.
    public func applyGalois(_ ciphertext: Ciphertext, element: Int, key: EvaluationKey) throws(HomomorphicEncryptionError) -> Ciphertext {
        try validateGaloisElement(element)
        guard ciphertext.polys.count == 2 else { throw .wrongPolynomialCount(got: ciphertext.polys.count, expected: 2) }
        guard let galois = key.galoisKeys[element] else { throw .missingGaloisKey(element: element) }
        var c0 = ciphertext.polys[0], c1 = ciphertext.polys[1]
        convert(&c0, toNTT: true)
        convert(&c1, toNTT: true)
        let rotated0 = applyAutomorphismToEvaluations(c0, element: element)
        let rotated1 = applyAutomorphismToEvaluations(c1, element: element)
        var coefficients1 = rotated1
        coefficients1.inverseNTT(transforms)
        var (u0, u1) = switchKey(coefficients1, evaluations: rotated1, key: galois)
        u0.add(rotated0, moduli: moduli)
        u1.isNTT = true
        return Ciphertext(polys: [u0, u1])
    }

    /// Applies X ↦ X^k to a plaintext (what `applyGalois` does under encryption).
    public func applyGalois(_ plaintext: Plaintext, element: Int) throws(HomomorphicEncryptionError) -> Plaintext {
        try validateGaloisElement(element)
        let t = plaintextModulus
        var out = [UInt32](repeating: 0, count: degree)
        let mask = 2 * degree - 1
        for i in 0..<degree {
            let target = (i * element) & mask
            if target < degree { out[target] = plaintext.coefficients[i] } else { out[target - degree] = t.negate(plaintext.coefficients[i]) }
        }
        return Plaintext(coefficients: out)
    }

    /// Galois keys for `galoisElements` and, when asked, a relinearization key (s² → s).
    public func generateEvaluationKey(
        galoisElements: [Int], relinearization: Bool, secretKey: SecretKey
    ) throws(HomomorphicEncryptionError) -> EvaluationKey {
        var generator = ChaCha20Generator.systemSeeded()
        var key = EvaluationKey()
        var secretCoefficients = secretKey.poly
        secretCoefficients.inverseNTT(transforms)
        for element in Set(galoisElements).sorted() {
            try validateGaloisElement(element)
            var source = applyAutomorphismToCoefficients(secretCoefficients, element: element)
            source.forwardNTT(transforms)
            key.galoisKeys[element] = generateKeySwitchingKey(from: source, secretKey: secretKey, using: &generator)
            source.zeroize()
        }
        secretCoefficients.zeroize()
        if relinearization {
            var square = secretKey.poly
            square.multiply(secretKey.poly, moduli: moduli)
            key.relinearizationKey = generateKeySwitchingKey(from: square, secretKey: secretKey, using: &generator)
            square.zeroize()
        }
        return key
    }
}
