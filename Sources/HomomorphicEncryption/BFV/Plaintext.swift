/// A BFV plaintext: N coefficients modulo t.
public struct Plaintext: Sendable, Equatable {
    public var coefficients: [UInt32]

    public init(coefficients: [UInt32]) { self.coefficients = coefficients }
}

/// A plaintext lifted into NTT form over a level's ciphertext primes (centered lift, so its
/// coefficients lie in (−t/2, t/2]), ready for repeated plaintext×ciphertext products: the
/// form a PIR server keeps its database in.
public struct PreparedPlaintext: Sendable, Equatable {
    public var poly: RNSPolynomial

    /// Wraps residues already in NTT form (e.g. loaded from a processed database).
    public init(poly: RNSPolynomial) {
        precondition(poly.isNTT)
        self.poly = poly
    }
}

/// A BFV ciphertext: polynomials (c_0, c_1[, c_2]) with c_0 + c_1·s (+ c_2·s²) ≈ Δ·m mod Q.
public struct Ciphertext: Sendable, Equatable {
    public var polys: [RNSPolynomial]
    /// When set, c_1 is the uniform polynomial expanded from this seed, so serialization can
    /// send the seed instead of c_1 (a "seeded" or compressed ciphertext).
    public var seed: [UInt8]?

    public init(polys: [RNSPolynomial], seed: [UInt8]? = nil) {
        self.polys = polys
        self.seed = seed
    }

    /// How many ciphertext primes it uses (its level).
    public var level: Int { polys[0].moduliCount }
    public var degree: Int { polys[0].degree }
}
