/// A BFV secret key: a uniform ternary polynomial s, held in NTT form modulo every prime
/// (ciphertext primes and the special prime). Its residues are overwritten when the key goes away.
public final class SecretKey: @unchecked Sendable {
    // Immutable after init; deinit zeroizes the buffer in place.
    let poly: RNSPolynomial

    init(poly: RNSPolynomial) { self.poly = poly }

    deinit { poly.zeroize() }
}

/// A key-switching key from a source secret s' to the secret s: for each ciphertext prime q_i,
/// the pair (b_i, a_i) with b_i = −a_i·s + e_i + P·[s']_{q_i-indicator} over all key primes
/// (the hybrid "special modulus" method of Gentry–Halevi–Smart, as in SEAL).
public struct KeySwitchingKey: Sendable, Equatable {
    /// b_i in NTT form over every key prime.
    public var b: [RNSPolynomial]
    /// a_i in NTT form over every key prime, reproducible from `seeds[i]`.
    public var a: [RNSPolynomial]
    /// The seed each a_i was expanded from (uniform NTT residues).
    public var seeds: [[UInt8]]

    public init(b: [RNSPolynomial], a: [RNSPolynomial], seeds: [[UInt8]]) {
        self.b = b
        self.a = a
        self.seeds = seeds
    }
}

/// A public key (b, a) = (−a·s + e, a) over the top-level ciphertext primes, NTT form.
public struct PublicKey: Sendable, Equatable {
    public var b: RNSPolynomial
    public var a: RNSPolynomial
}

/// The keys a server needs to compute on a client's ciphertexts: Galois keys (by element)
/// and, when requested, the relinearization key.
public struct EvaluationKey: Sendable, Equatable {
    public var galoisKeys: [Int: KeySwitchingKey]
    public var relinearizationKey: KeySwitchingKey?

    public init(galoisKeys: [Int: KeySwitchingKey] = [:], relinearizationKey: KeySwitchingKey? = nil) {
        self.galoisKeys = galoisKeys
        self.relinearizationKey = relinearizationKey
    }

    /// The bytes its residues and seeds take in memory (what a server holding it pays).
    public var byteCount: Int {
        (Array(galoisKeys.values) + (relinearizationKey.map { [$0] } ?? [])).reduce(0) { total, key in
            total + (key.b + key.a).reduce(0) { $0 + $1.storage.count * MemoryLayout<UInt32>.stride } + key.seeds.reduce(0) { $0 + $1.count }
        }
    }
}
