/// Everything precomputed for one parameter set: the primes, their NTTs, and per-level
/// constants for encoding, decryption, modulus switching and key switching.
///
/// Immutable and `Sendable`; build it once and share it between threads.
public final class BFVContext: Sendable {
    public let parameters: EncryptionParameters
    public let degree: Int
    public let plaintextModulus: Modulus
    /// Ciphertext primes `q_0 … q_{L−1}` followed by the special prime P.
    public let moduli: [Modulus]
    /// One transform per entry of `moduli`.
    public let transforms: [NTT]
    /// The transform modulo t when SIMD encoding is possible.
    let plaintextTransform: NTT?
    /// Per level: `levels[L − 1]` serves ciphertexts with L primes.
    let levels: [LevelConstants]
    /// P^−1 mod q_i and ⌊P/2⌋, for dividing key-switching results by P with rounding.
    let specialInverse: [UInt32]
    let specialHalf: UInt32
    /// The auxiliary base B for ciphertext products, its transforms, and per-level constants.
    let auxiliaryModuli: [Modulus]
    let auxiliaryTransforms: [NTT]
    let multiplication: [MultiplicationConstants]
    /// Per prime, ψ^k for k in 0 ..< 2N (monomial products in NTT form).
    let rootPowers: [[UInt32]]
    /// NTT-order permutations of Galois automorphisms, computed on first use.
    let permutationCache = Mutex<[Int: [Int]]>([:])
    /// NTT forms of monomials X^p, computed on first use.
    let monomialCache = Mutex<[Int: ([UInt32], [UInt32])]>([:])

    /// How many ciphertext products one accumulator may sum before scaling (the auxiliary base
    /// is sized for it).
    public static let maximumAccumulatedProducts = 1024

    /// The number of ciphertext primes at the top level.
    public var maximumLevel: Int { parameters.coefficientModuli.count }
    /// Index of the special prime in `moduli`.
    var specialIndex: Int { parameters.coefficientModuli.count }

    public init(parameters: EncryptionParameters) throws(HomomorphicEncryptionError) {
        self.parameters = parameters
        degree = parameters.polyDegree
        plaintextModulus = try Modulus(parameters.plaintextModulus)
        var moduli: [Modulus] = []
        for q in parameters.coefficientModuli + [parameters.specialModulus] { moduli.append(try Modulus(q)) }
        self.moduli = moduli
        var transforms: [NTT] = []
        for q in moduli { transforms.append(try NTT(degree: parameters.polyDegree, modulus: q)) }
        self.transforms = transforms
        plaintextTransform = parameters.supportsSIMDEncoding
            ? try NTT(degree: parameters.polyDegree, modulus: plaintextModulus) : nil
        var levels: [LevelConstants] = []
        for count in 1...parameters.coefficientModuli.count {
            levels.append(try LevelConstants(moduli: Array(moduli.prefix(count)), plaintextModulus: plaintextModulus))
        }
        self.levels = levels
        let special = moduli[parameters.coefficientModuli.count]
        var inverses: [UInt32] = []
        for q in moduli.dropLast() { inverses.append(try q.inverse(special.value % q.value)) }
        specialInverse = inverses
        specialHalf = special.value / 2
        // B must exceed A·t·N·Q with margin (A accumulated products), so that the tensor is
        // exact in Q·B and round(t·x/Q) is centered in B.
        let needed = log2(Double(BFVContext.maximumAccumulatedProducts)) + log2(Double(parameters.plaintextModulus))
            + log2(Double(parameters.polyDegree)) + parameters.logQ + 3
        var auxiliary: [Modulus] = []
        var bits = 0.0
        var used = Set(parameters.coefficientModuli + [parameters.specialModulus])
        while bits < needed {
            let next = try Primes.nttFriendly(bits: 30, degree: parameters.polyDegree, count: 1, excluding: used)[0]
            used.insert(next)
            auxiliary.append(try Modulus(next))
            bits += log2(Double(next))
        }
        auxiliaryModuli = auxiliary
        var auxiliaryTransforms: [NTT] = []
        for b in auxiliary { auxiliaryTransforms.append(try NTT(degree: parameters.polyDegree, modulus: b)) }
        self.auxiliaryTransforms = auxiliaryTransforms
        var multiplication: [MultiplicationConstants] = []
        for count in 1...parameters.coefficientModuli.count {
            multiplication.append(try MultiplicationConstants(
                ciphertextModuli: Array(moduli.prefix(count)), auxiliary: auxiliary, plaintextModulus: plaintextModulus))
        }
        self.multiplication = multiplication
        rootPowers = transforms.map { ntt in
            var powers = [UInt32](repeating: 1, count: 2 * parameters.polyDegree)
            for k in 1..<powers.count { powers[k] = ntt.modulus.multiply(powers[k - 1], ntt.root) }
            return powers
        }
    }

    /// The ciphertext primes of a level.
    func ciphertextModuli(level: Int) -> [Modulus] { Array(moduli.prefix(level)) }

    /// The key primes: every ciphertext prime and the special prime.
    var keyModuli: [Modulus] { moduli }
}

import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Constants for ciphertexts with `count` primes, Q = q_0 ⋯ q_{count−1}.
struct LevelConstants: Sendable {
    let count: Int
    /// ⌊Q/t⌋ mod q_i: the scaling Δ that encodes a plaintext into the top bits.
    let delta: [UInt32]
    /// Decryption after Halevi–Polyakov–Shoup ("An Improved RNS Variant of the BFV Homomorphic
    /// Encryption Scheme", §3): t·y_i/q_i = ω_i + λ_i with y_i = (Q/q_i)^−1 mod q_i.
    let decryptIntegral: [UInt32]
    let decryptFraction: [Double]
    /// y_i = (Q/q_i)^−1 mod q_i and Q/q_i, for exact CRT composition.
    let crtInverse: [UInt32]
    let crtFactors: [WideUInt]
    let modulus: WideUInt
    /// q_{count−1}^−1 mod q_i for the primes that stay when the last is dropped.
    let lastInverse: [UInt32]

    init(moduli: [Modulus], plaintextModulus t: Modulus) throws(HomomorphicEncryptionError) {
        count = moduli.count
        var qModT: UInt32 = 1
        var product = WideUInt(1)
        for q in moduli {
            qModT = t.multiply(qModT, q.value % t.value)
            product = product * UInt64(q.value)
        }
        modulus = product
        var delta: [UInt32] = [], integral: [UInt32] = [], fraction: [Double] = []
        var inverses: [UInt32] = [], factors: [WideUInt] = [], last: [UInt32] = []
        for (i, q) in moduli.enumerated() {
            let tInverse = try q.inverse(t.value % q.value)
            delta.append(q.multiply(q.negate(qModT % q.value), tInverse))
            var rest: UInt32 = 1
            var factor = WideUInt(1)
            for (j, other) in moduli.enumerated() where j != i {
                rest = q.multiply(rest, other.value % q.value)
                factor = factor * UInt64(other.value)
            }
            let y = try q.inverse(rest)
            inverses.append(y)
            factors.append(factor)
            let ty = UInt64(t.value) * UInt64(y)
            integral.append(UInt32(ty / UInt64(q.value)) % t.value)
            fraction.append(Double(ty % UInt64(q.value)) / Double(q.value))
            if i < moduli.count - 1 {
                last.append(try q.inverse(moduli[moduli.count - 1].value % q.value))
            }
        }
        self.delta = delta
        decryptIntegral = integral
        decryptFraction = fraction
        crtInverse = inverses
        crtFactors = factors
        lastInverse = last
    }
}
