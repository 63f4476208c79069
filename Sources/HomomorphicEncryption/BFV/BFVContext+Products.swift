import CHomomorphicKernels

extension BFVContext {
    /// Σ plaintexts[i] · ciphertexts[i] (nil plaintexts skipped), with the products of each
    /// prime summed in 64-bit lanes and reduced once every `lazyTerms` terms.
    public func dotProduct(
        _ plaintexts: [PreparedPlaintext?], _ ciphertexts: [Ciphertext]
    ) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard plaintexts.count == ciphertexts.count, let first = ciphertexts.first else {
            throw .invalidParameters("dot product of \(plaintexts.count) plaintexts and \(ciphertexts.count) ciphertexts")
        }
        let level = first.level
        let n = degree
        for c in ciphertexts {
            guard c.level == level else { throw .levelMismatch(left: level, right: c.level) }
            guard c.polys.count == 2, c.polys[0].isNTT, c.polys[1].isNTT else {
                throw .wrongPolynomialCount(got: c.polys.count, expected: 2)
            }
        }
        // Products are below q² < 2^(2·bits); 2^64 / q² of them fit in a UInt64.
        let widest = moduli.prefix(level).map(\.bitWidth).max() ?? 30
        let lazyTerms = max(1, 1 << max(0, 64 - 2 * widest))
        var result = Ciphertext(polys: [RNSPolynomial(degree: n, moduliCount: level, isNTT: true),
                                        RNSPolynomial(degree: n, moduliCount: level, isNTT: true)])
        var lanes = [UInt64](repeating: 0, count: n * level)
        for k in 0..<2 {
            for j in lanes.indices { lanes[j] = 0 }
            var pending = 0
            lanes.withUnsafeMutableBufferPointer { acc in
                for (index, maybePlaintext) in plaintexts.enumerated() {
                    guard let plaintext = maybePlaintext else { continue }
                    plaintext.poly.storage.withUnsafeBufferPointer { p in
                        ciphertexts[index].polys[k].storage.withUnsafeBufferPointer { c in
                            netext_he_multiply_accumulate(acc.baseAddress!, p.baseAddress!, c.baseAddress!, n * level)
                        }
                    }
                    pending += 1
                    if pending == lazyTerms {
                        for i in 0..<level {
                            let q = moduli[i]
                            let (c, cs, r) = q.wideReductionConstants
                            netext_he_reduce64_in_place(acc.baseAddress! + i &* n, n, q.value, c, cs, r)
                        }
                        pending = 1
                    }
                }
            }
            lanes.withUnsafeBufferPointer { lanes in
                result.polys[k].forEachRow { row, i in
                    let q = moduli[i]
                    let (c, cs, r) = q.wideReductionConstants
                    netext_he_reduce64(row.baseAddress!, lanes.baseAddress! + i &* n, n, q.value, c, cs, r)
                }
            }
        }
        return result
    }

    /// a · X^power (X^N = −1), on either form. In NTT form it is a pointwise product: position
    /// j holds the evaluation at ψ^(2·rev(j)+1), where X^p evaluates to ψ^((2·rev(j)+1)·p).
    public func multiplyByMonomial(_ a: Ciphertext, power: Int) -> Ciphertext {
        let twoN = 2 * degree
        let p = ((power % twoN) + twoN) % twoN
        let (values, companions) = monomialEvaluations(power: p)
        var out = a
        let n = degree
        for k in out.polys.indices {
            let wasNTT = out.polys[k].isNTT
            convert(&out.polys[k], toNTT: true)
            values.withUnsafeBufferPointer { m in
                companions.withUnsafeBufferPointer { ms in
                    out.polys[k].forEachRow { row, r in
                        let q = moduli[r]
                        for j in 0..<n { row[j] = q.multiplyShoup(row[j], m[r &* n &+ j], ms[r &* n &+ j]) }
                    }
                }
            }
            if !wasNTT { convert(&out.polys[k], toNTT: false) }
        }
        out.seed = nil
        return out
    }

    /// X^p in NTT form modulo every prime, with Shoup companions (cached per power).
    func monomialEvaluations(power p: Int) -> ([UInt32], [UInt32]) {
        if let cached = monomialCache.withLock({ $0[p] }) { return cached }
        let n = degree, logN = degree.trailingZeroBitCount, mask = 2 * degree - 1
        var values = [UInt32](repeating: 0, count: n * moduli.count)
        var companions = values
        for (r, q) in moduli.enumerated() {
            for j in 0..<n {
                let exponent = ((2 * NTT.bitReverse(j, bits: logN) + 1) * p) & mask
                values[r * n + j] = rootPowers[r][exponent]
                companions[r * n + j] = q.shoup(rootPowers[r][exponent])
            }
        }
        monomialCache.withLock { $0[p] = (values, companions) }
        return (values, companions)
    }
}
