import CHomomorphicKernels

extension BFVContext {
    /// A key-switching key from `source` (NTT form over every key prime) to `secretKey`.
    /// Each a_i is expanded from its own seed, so the key travels as (seed_i, b_i) pairs.
    func generateKeySwitchingKey(
        from source: RNSPolynomial, secretKey: SecretKey, using generator: inout ChaCha20Generator
    ) -> KeySwitchingKey {
        let special = moduli[specialIndex]
        var bs: [RNSPolynomial] = [], as_: [RNSPolynomial] = [], seeds: [[UInt8]] = []
        for i in 0..<maximumLevel {
            let seed = (0..<SeedStream.seedByteCount).map { _ in UInt8(truncatingIfNeeded: generator.nextWord()) }
            seeds.append(seed)
            var expander = SeedStream(seed: seed)
            let a = Sampling.uniform(degree: degree, moduli: moduli[...], isNTT: true, from: &expander)
            var b = a
            b.multiply(secretKey.poly, moduli: moduli)
            b.negate(moduli: moduli)
            var e = Sampling.lift(Sampling.centeredBinomial(degree: degree, using: &generator), moduli: moduli[...])
            e.forwardNTT(transforms)
            b.add(e, moduli: moduli)
            // + P·s' in row i only (the CRT indicator of q_i; P ≡ 0 in the special row).
            let q = moduli[i]
            let p = special.value % q.value, pShoup = q.shoup(p)
            let n = degree
            source.storage.withUnsafeBufferPointer { s in
                b.storage.withUnsafeMutableBufferPointer { out in
                    for j in 0..<n {
                        out[i * n + j] = q.add(out[i * n + j], q.multiplyShoup(s[i * n + j], p, pShoup))
                    }
                }
            }
            bs.append(b)
            as_.append(a)
        }
        return KeySwitchingKey(b: bs, a: as_, seeds: seeds)
    }

    /// Re-creates the a_i of a key from their seeds (after receiving only the b_i).
    public func expandKeySwitchingKey(seeds: [[UInt8]], b: [RNSPolynomial]) -> KeySwitchingKey {
        let as_ = seeds.map { seed in
            var expander = SeedStream(seed: seed)
            return Sampling.uniform(degree: degree, moduli: moduli[...], isNTT: true, from: &expander)
        }
        return KeySwitchingKey(b: b, a: as_, seeds: seeds)
    }

    /// Switches `c` (coefficient form over the first `c.moduliCount` ciphertext primes), which
    /// multiplies the key's source secret, into (u_0, u_1) with u_0 + u_1·s ≈ c·s', NTT form.
    /// `evaluations`, when given, is `c` in NTT form: its rows stand in for the digit
    /// transforms modulo each digit's own prime.
    func switchKey(_ c: RNSPolynomial, evaluations: RNSPolynomial? = nil, key: KeySwitchingKey) -> (RNSPolynomial, RNSPolynomial) {
        precondition(!c.isNTT)
        let level = c.moduliCount
        let n = degree
        let targets = Array(0..<level) + [specialIndex]
        // Accumulators over the level's primes plus the special prime, without reduction:
        // each product is below 2^60 and at most 16 are summed.
        var acc0 = [UInt64](repeating: 0, count: (level + 1) * n)
        var acc1 = [UInt64](repeating: 0, count: (level + 1) * n)
        var digit = [UInt32](repeating: 0, count: n)
        c.storage.withUnsafeBufferPointer { source in
            digit.withUnsafeMutableBufferPointer { d in
                acc0.withUnsafeMutableBufferPointer { a0 in
                    acc1.withUnsafeMutableBufferPointer { a1 in
                        for i in 0..<level {
                            for (slot, m) in targets.enumerated() {
                                if m == i, let evaluations {
                                    evaluations.storage.withUnsafeBufferPointer { e in
                                        for j in 0..<n { d[j] = e[i &* n &+ j] }
                                    }
                                } else {
                                    let q = moduli[m]
                                    for j in 0..<n { d[j] = q.reduce(UInt64(source[i &* n &+ j])) }
                                    transforms[m].forward(d)
                                }
                                key.b[i].storage.withUnsafeBufferPointer { b in
                                    key.a[i].storage.withUnsafeBufferPointer { a in
                                        let base = m &* n, out = slot &* n
                                        netext_he_multiply_accumulate_pair(
                                            a0.baseAddress! + out, a1.baseAddress! + out, d.baseAddress!,
                                            b.baseAddress! + base, a.baseAddress! + base, n)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        func finish(_ acc: [UInt64]) -> RNSPolynomial {
            var poly = RNSPolynomial(degree: n, moduliCount: level + 1, isNTT: true)
            acc.withUnsafeBufferPointer { a in
                poly.forEachRow { row, slot in
                    let q = moduli[targets[slot]]
                    let (c, cs, r) = q.wideReductionConstants
                    netext_he_reduce64(row.baseAddress!, a.baseAddress! + slot &* n, n, q.value, c, cs, r)
                }
            }
            divideAndDropLast(&poly, inverses: specialInverse, half: specialHalf, lastModulusIndex: specialIndex)
            return poly
        }
        return (finish(acc0), finish(acc1))
    }

    /// Relinearizes (c_0, c_1, c_2) to (c_0 + u_0, c_1 + u_1) where u switches c_2 from s² to s.
    public func relinearize(_ ciphertext: Ciphertext, key: EvaluationKey) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard ciphertext.polys.count == 3 else { throw .wrongPolynomialCount(got: ciphertext.polys.count, expected: 3) }
        guard let relin = key.relinearizationKey else { throw .missingRelinearizationKey }
        var polys = ciphertext.polys
        var c2 = polys.removeLast()
        convert(&c2, toNTT: false)
        let (u0, u1) = switchKey(c2, key: relin)
        for k in 0..<2 { convert(&polys[k], toNTT: true) }
        polys[0].add(u0, moduli: moduli)
        polys[1].add(u1, moduli: moduli)
        return Ciphertext(polys: polys)
    }
}
