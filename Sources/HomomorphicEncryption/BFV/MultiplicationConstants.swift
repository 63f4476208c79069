/// Constants for ciphertext×ciphertext products at one level (Q = q_0 ⋯ q_{L−1}), following
/// Halevi, Polyakov and Shoup, "An Improved RNS Variant of the BFV Homomorphic Encryption
/// Scheme" (CT-RSA 2019), §4: lift both operands to Q·B (B an auxiliary base of 30-bit primes),
/// tensor there, scale by t/Q into B, and convert back to Q.
struct MultiplicationConstants: Sendable {
    /// The ciphertext primes' count at this level.
    let level: Int
    /// Indices into `BFVContext.auxiliaryModuli` used at this level (all of them).
    let auxiliaryCount: Int

    // Q → B (centered lift): x = Σ [x_i·y_i]_{q_i}·(Q/q_i) − v·Q, v = round(Σ [x_i·y_i]_{q_i}/q_i).
    /// (Q/q_i) mod b_j, stored [j][i].
    let qHatModB: [[UInt32]]
    /// Q mod b_j.
    let qModB: [UInt32]
    /// 1/q_i.
    let inverseQ: [Double]

    // Q·B → B, the scaling round(t·x/Q): for x with residues x_i (mod q_i) and x_j (mod b_j),
    // round(t·x/Q) ≡ Σ_i x_i·ω_i + round(Σ_i x_i·θ_i) + x_j·[t·Q^−1]_{b_j} (mod b_j), where
    // t·ŷ_i·B/q_i = ω_i + θ_i and ŷ_i = ((QB/q_i)^−1 mod q_i).
    /// ω_i mod b_j, stored [j][i].
    let omegaModB: [[UInt32]]
    /// θ_i.
    let theta: [Double]
    /// t·Q^−1 mod b_j.
    let tOverQModB: [UInt32]

    // B → Q (centered): d = Σ [d_j·z_j]_{b_j}·(B/b_j) − v·B, v = round(Σ [d_j·z_j]_{b_j}/b_j).
    /// z_j = (B/b_j)^−1 mod b_j.
    let bHatInverse: [UInt32]
    /// (B/b_j) mod q_i, stored [i][j].
    let bHatModQ: [[UInt32]]
    /// B mod q_i.
    let bModQ: [UInt32]
    /// 1/b_j.
    let inverseB: [Double]

    init(ciphertextModuli q: [Modulus], auxiliary b: [Modulus], plaintextModulus t: Modulus)
        throws(HomomorphicEncryptionError)
    {
        level = q.count
        auxiliaryCount = b.count
        func product(_ list: [Modulus], skipping skip: Int?, modulo m: Modulus) -> UInt32 {
            var r: UInt32 = 1 % m.value
            for (k, p) in list.enumerated() where k != skip { r = m.multiply(r, p.value % m.value) }
            return r
        }
        qHatModB = b.map { bj in (0..<q.count).map { i in product(q, skipping: i, modulo: bj) } }
        qModB = b.map { product(q, skipping: nil, modulo: $0) }
        inverseQ = q.map { 1.0 / Double($0.value) }

        var omega = [[UInt32]](repeating: [UInt32](repeating: 0, count: q.count), count: b.count)
        var theta: [Double] = []
        var bigB = WideUInt(1)
        for bj in b { bigB = bigB * UInt64(bj.value) }
        for (i, qi) in q.enumerated() {
            // ŷ_i = ((Q/q_i)·B)^−1 mod q_i
            let hat = qi.multiply(product(q, skipping: i, modulo: qi), product(b, skipping: nil, modulo: qi))
            let yHat = try qi.inverse(hat)
            // t·ŷ_i·B = ω_i·q_i + r  →  θ_i = r/q_i
            let numerator = bigB * (UInt64(t.value) * UInt64(yHat))
            let (quotient, remainder) = numerator.quotientAndRemainder(dividingBy: UInt64(qi.value))
            theta.append(Double(remainder) / Double(qi.value))
            for (j, bj) in b.enumerated() {
                omega[j][i] = UInt32(quotient.quotientAndRemainder(dividingBy: UInt64(bj.value)).remainder)
            }
        }
        omegaModB = omega
        self.theta = theta
        var tOverQ: [UInt32] = []
        for bj in b {
            tOverQ.append(bj.multiply(t.value % bj.value, try bj.inverse(product(q, skipping: nil, modulo: bj))))
        }
        tOverQModB = tOverQ

        var z: [UInt32] = []
        for (j, bj) in b.enumerated() { z.append(try bj.inverse(product(b, skipping: j, modulo: bj))) }
        bHatInverse = z
        bHatModQ = q.map { qi in (0..<b.count).map { j in product(b, skipping: j, modulo: qi) } }
        bModQ = q.map { product(b, skipping: nil, modulo: $0) }
        inverseB = b.map { 1.0 / Double($0.value) }
    }
}
