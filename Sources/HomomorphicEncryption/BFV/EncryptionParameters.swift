/// The security a parameter set claims, checked against the Homomorphic Encryption Standard
/// (Albrecht et al., 2018, Table 1: ternary secrets, σ = 3.2) bounds on `log2(Q·P)`.
public enum SecurityLevel: String, Sendable, Hashable, Codable {
    /// 128-bit against classical attacks (HE Standard Table 1, uniform ternary secret).
    case classical128
    /// 128-bit against quantum attacks (the same tables' post-quantum estimates, as
    /// Apple's swift-homomorphic-encryption uses for its `quantum128` parameter sets).
    case quantum128
    /// No claim: small parameters for tests only. Their names start with `insecure`.
    case unchecked

    /// Largest total modulus bits for a degree, or nil when the degree is not tabulated.
    public func maximumLogQ(degree: Int) -> Int? {
        switch self {
        case .classical128: [1024: 27, 2048: 54, 4096: 109, 8192: 218, 16384: 438, 32768: 881][degree]
        case .quantum128: [1024: 25, 2048: 51, 4096: 101, 8192: 202, 16384: 411, 32768: 827][degree]
        case .unchecked: Int.max
        }
    }
}

/// What defines a BFV instance: ring degree N, plaintext modulus t, the ciphertext primes
/// `q_0 … q_{L−1}` and the key-switching ("special") prime P.
public struct EncryptionParameters: Sendable, Hashable, CustomStringConvertible {
    /// A short name, e.g. `n_4096_logq_27_28_28_logt_5`; insecure sets start with `insecure`.
    public let name: String
    public let polyDegree: Int
    public let plaintextModulus: UInt32
    /// The ciphertext primes, in the order they are dropped last-to-first by modulus switching.
    public let coefficientModuli: [UInt32]
    /// The key-switching prime; it never appears in ciphertexts, only in keys.
    public let specialModulus: UInt32
    public let securityLevel: SecurityLevel

    /// Checks sizes, primality, NTT-friendliness and the security bound.
    public init(
        name: String, polyDegree: Int, plaintextModulus: UInt32, coefficientModuli: [UInt32],
        specialModulus: UInt32, securityLevel: SecurityLevel
    ) throws(HomomorphicEncryptionError) {
        guard polyDegree >= 2, polyDegree.nonzeroBitCount == 1, polyDegree <= 32768 else {
            throw .invalidParameters("degree \(polyDegree) must be a power of two in 2…32768")
        }
        guard plaintextModulus >= 2, !coefficientModuli.isEmpty else {
            throw .invalidParameters("plaintext modulus \(plaintextModulus) must be ≥ 2 and at least one ciphertext prime given")
        }
        let all = coefficientModuli + [specialModulus]
        guard Set(all).count == all.count else { throw .invalidParameters("primes must be distinct: \(all)") }
        for q in all {
            guard q < Modulus.limit, Primes.isPrime(q), (q - 1) % UInt32(2 * polyDegree) == 0 else {
                throw .invalidModulus(value: UInt64(q), reason: "must be a prime below 2^30 with q ≡ 1 (mod \(2 * polyDegree))")
            }
            guard q > plaintextModulus else {
                throw .invalidModulus(value: UInt64(q), reason: "must exceed the plaintext modulus \(plaintextModulus)")
            }
        }
        let logQ = all.reduce(0.0) { $0 + log2(Double($1)) }
        guard let bound = securityLevel.maximumLogQ(degree: polyDegree) else {
            throw .invalidParameters("degree \(polyDegree) has no \(securityLevel) bound in the HE Standard tables")
        }
        guard logQ <= Double(bound) else {
            throw .invalidParameters(String(format: "log2(Q·P) = %.1f exceeds the %@ bound %d for N = %d", logQ, securityLevel.rawValue, bound, polyDegree))
        }
        guard (securityLevel == .unchecked) == name.hasPrefix("insecure") else {
            throw .invalidParameters("parameter set '\(name)': names start with 'insecure' exactly when no security is claimed")
        }
        self.name = name
        self.polyDegree = polyDegree
        self.plaintextModulus = plaintextModulus
        self.coefficientModuli = coefficientModuli
        self.specialModulus = specialModulus
        self.securityLevel = securityLevel
    }

    public var description: String { name }

    /// log2 of the ciphertext modulus Q at the top level.
    public var logQ: Double { coefficientModuli.reduce(0.0) { $0 + log2(Double($1)) } }

    /// Whether SIMD (batch) encoding is possible: t prime and t ≡ 1 (mod 2N).
    public var supportsSIMDEncoding: Bool {
        Primes.isPrime(plaintextModulus) && (plaintextModulus - 1) % UInt32(2 * polyDegree) == 0
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
