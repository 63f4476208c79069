extension BFVContext {
    /// A fresh secret key from the system's CSPRNG.
    public func generateSecretKey() -> SecretKey {
        var generator = ChaCha20Generator.systemSeeded()
        return generateSecretKey(using: &generator)
    }

    /// A secret key drawn from `generator` (tests pass a seeded one to reproduce a run).
    public func generateSecretKey(using generator: inout ChaCha20Generator) -> SecretKey {
        var small = Sampling.ternary(degree: degree, using: &generator)
        var poly = Sampling.lift(small, moduli: moduli[...])
        small.withUnsafeMutableBytes { zeroizeBytes($0) }
        poly.forwardNTT(transforms)
        return SecretKey(poly: poly)
    }

    /// Δ·m + e in coefficient form over `level` primes, converted to NTT form.
    func scaledMessagePlusError(
        _ plaintext: Plaintext, level: Int, using generator: inout ChaCha20Generator
    ) -> RNSPolynomial {
        let error = Sampling.centeredBinomial(degree: degree, using: &generator)
        var poly = Sampling.lift(error, moduli: moduli[..<level])
        addScaledMessage(plaintext, to: &poly)
        poly.forwardNTT(transforms)
        return poly
    }

    /// Adds Δ·m to a coefficient-form polynomial.
    func addScaledMessage(_ plaintext: Plaintext, to poly: inout RNSPolynomial) {
        precondition(!poly.isNTT)
        let constants = levels[poly.moduliCount - 1]
        let m = plaintext.coefficients
        poly.forEachRow { row, i in
            let q = moduli[i]
            let delta = constants.delta[i], deltaShoup = q.shoup(delta)
            for j in 0..<row.count {
                row[j] = q.add(row[j], q.multiplyShoup(m[j], delta, deltaShoup))
            }
        }
    }

    /// Encrypts under the secret key at the top level, as a seeded ciphertext:
    /// c_1 = a expanded from a fresh seed (``SeedStream``, NTT evaluations), c_0 = −a·s + e + Δ·m.
    public func encrypt(_ plaintext: Plaintext, secretKey: SecretKey) -> Ciphertext {
        var generator = ChaCha20Generator.systemSeeded()
        return encrypt(plaintext, secretKey: secretKey, seed: SeedStream.randomSeed(), using: &generator)
    }

    /// Secret-key encryption with an explicit seed for `a` and a generator for the error.
    public func encrypt(
        _ plaintext: Plaintext, secretKey: SecretKey, seed: [UInt8], using generator: inout ChaCha20Generator
    ) -> Ciphertext {
        let level = maximumLevel
        var expander = SeedStream(seed: seed)
        let a = Sampling.uniform(degree: degree, moduli: moduli[..<level], isNTT: true, from: &expander)
        var c0 = a
        c0.multiply(secretKey.poly, moduli: moduli)
        c0.negate(moduli: moduli)
        c0.add(scaledMessagePlusError(plaintext, level: level, using: &generator), moduli: moduli)
        return Ciphertext(polys: [c0, a], seed: seed)
    }

    /// Regenerates c_1 of a seeded ciphertext from its seed (after deserializing c_0 alone).
    public func expandSeededPolynomial(seed: [UInt8], level: Int) -> RNSPolynomial {
        var expander = SeedStream(seed: seed)
        return Sampling.uniform(degree: degree, moduli: moduli[..<level], isNTT: true, from: &expander)
    }

    /// A public key for `secretKey`: (−a·s + e, a) over the top-level primes.
    public func generatePublicKey(secretKey: SecretKey) -> PublicKey {
        var generator = ChaCha20Generator.systemSeeded()
        let level = maximumLevel
        var expander = SeedStream(seed: SeedStream.randomSeed())
        let a = Sampling.uniform(degree: degree, moduli: moduli[..<level], isNTT: true, from: &expander)
        var b = a
        b.multiply(secretKey.poly, moduli: moduli)
        b.negate(moduli: moduli)
        var e = Sampling.lift(Sampling.centeredBinomial(degree: degree, using: &generator), moduli: moduli[..<level])
        e.forwardNTT(transforms)
        b.add(e, moduli: moduli)
        return PublicKey(b: b, a: a)
    }

    /// Public-key encryption: u ternary, c = (b·u + e_0 + Δ·m, a·u + e_1).
    public func encrypt(_ plaintext: Plaintext, publicKey: PublicKey) -> Ciphertext {
        var generator = ChaCha20Generator.systemSeeded()
        let level = maximumLevel
        var small = Sampling.ternary(degree: degree, using: &generator)
        var u = Sampling.lift(small, moduli: moduli[..<level])
        small.withUnsafeMutableBytes { zeroizeBytes($0) }
        u.forwardNTT(transforms)
        var c0 = publicKey.b
        c0.multiply(u, moduli: moduli)
        c0.add(scaledMessagePlusError(plaintext, level: level, using: &generator), moduli: moduli)
        var c1 = publicKey.a
        c1.multiply(u, moduli: moduli)
        var e1 = Sampling.lift(Sampling.centeredBinomial(degree: degree, using: &generator), moduli: moduli[..<level])
        e1.forwardNTT(transforms)
        c1.add(e1, moduli: moduli)
        u.zeroize()
        return Ciphertext(polys: [c0, c1])
    }

    /// c_0 + c_1·s (+ c_2·s² …) in coefficient form: Δ·m + noise.
    func phase(_ ciphertext: Ciphertext, secretKey: SecretKey) -> RNSPolynomial {
        let level = ciphertext.level
        var polys = ciphertext.polys
        for k in polys.indices where !polys[k].isNTT { polys[k].forwardNTT(transforms) }
        var result = polys[polys.count - 1]
        for k in stride(from: polys.count - 2, through: 0, by: -1) {
            // Horner: result = result·s + c_k
            result.multiply(secretKey.poly, moduli: moduli)
            result.add(polys[k], moduli: moduli)
        }
        precondition(result.moduliCount == level)
        result.inverseNTT(transforms)
        return result
    }

    /// Decrypts: m = round(t/Q · [c_0 + c_1·s]_Q) mod t, computed residue by residue as in
    /// Halevi–Polyakov–Shoup §3 (no big integers).
    public func decrypt(_ ciphertext: Ciphertext, secretKey: SecretKey) -> Plaintext {
        let x = phase(ciphertext, secretKey: secretKey)
        let constants = levels[x.moduliCount - 1]
        let t = plaintextModulus
        var out = [UInt32](repeating: 0, count: degree)
        x.storage.withUnsafeBufferPointer { rows in
            for j in 0..<degree {
                var integral: UInt64 = 0
                var fraction = 0.5
                for i in 0..<constants.count {
                    let r = rows[i * degree + j]
                    integral &+= UInt64(r) &* UInt64(constants.decryptIntegral[i])
                    fraction += Double(r) * constants.decryptFraction[i]
                }
                let rounded = UInt64(fraction)  // ⌊· + 0.5⌋
                out[j] = t.reduce(integral &+ rounded)
            }
        }
        x.zeroize()
        return Plaintext(coefficients: out)
    }

    /// The remaining noise budget in bits: log2(Q) − log2(‖[t·(c_0 + c_1·s)]_Q‖∞) − 1, 0 when
    /// decryption would fail. Exact (big-integer CRT); a diagnostic, not constant-time.
    public func noiseBudget(_ ciphertext: Ciphertext, secretKey: SecretKey) -> Int {
        var x = phase(ciphertext, secretKey: secretKey)
        let constants = levels[x.moduliCount - 1]
        let t = plaintextModulus.value
        x.multiply(scalars: Array(repeating: t, count: x.moduliCount).enumerated().map { t % moduli[$0.offset].value },
                   moduli: moduli)
        var largest = WideUInt(0)
        for j in 0..<degree {
            var value = WideUInt(0)
            for i in 0..<constants.count {
                let q = moduli[i]
                let term = q.multiply(x.storage[i * degree + j], constants.crtInverse[i])
                value = value + constants.crtFactors[i] * UInt64(term)
            }
            while value >= constants.modulus { value = value - constants.modulus }
            let magnitude = value * 2 > constants.modulus ? constants.modulus - value : value
            if magnitude > largest { largest = magnitude }
        }
        x.zeroize()
        return max(0, constants.modulus.bitWidth - largest.bitWidth - 1)
    }
}
