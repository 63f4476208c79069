import CHomomorphicKernels

/// The negacyclic number-theoretic transform over `Z_q[X]/(X^N + 1)` for one prime `q`.
///
/// Forward: Cooley–Tukey, natural order in, bit-reversed order out; inverse: Gentleman–Sande,
/// bit-reversed in, natural out (Longa and Naehrig, "Speeding up the Number Theoretic Transform
/// for Faster Ideal Lattice-Based Cryptography", Algorithms 1 and 2), with Harvey's lazy
/// butterflies (values kept below `4q`) and Shoup multiplication by precomputed twiddles.
/// The butterfly loops are in `CHomomorphicKernels` (C, dispatched at run time to AVX-512,
/// AVX2 or baseline code), since Swift cannot compile one function for several CPU levels.
public struct NTT: Sendable {
    public let degree: Int
    public let modulus: Modulus
    /// The primitive 2N-th root of unity ψ the transform uses.
    public let root: UInt32
    /// ψ^bitreverse(i) and its Shoup companion.
    let forwardTwiddles: [UInt32]
    let forwardShoup: [UInt32]
    /// ψ^−bitreverse(i) and its Shoup companion.
    let inverseTwiddles: [UInt32]
    let inverseShoup: [UInt32]
    /// N^−1 mod q, with the last inverse twiddle folded in for the final stage.
    let inverseDegree: UInt32
    let inverseDegreeShoup: UInt32
    let inverseDegreeTimesLast: UInt32
    let inverseDegreeTimesLastShoup: UInt32

    public init(degree: Int, modulus: Modulus) throws(HomomorphicEncryptionError) {
        guard degree >= 2, degree.nonzeroBitCount == 1 else {
            throw .invalidParameters("polynomial degree \(degree) must be a power of two ≥ 2")
        }
        self.degree = degree
        self.modulus = modulus
        let psi = try Primes.minimalPrimitiveRoot(order: 2 * degree, modulus: modulus)
        root = psi
        let psiInverse = try modulus.inverse(psi)
        let logN = degree.trailingZeroBitCount
        var forward = [UInt32](repeating: 0, count: degree)
        var inverse = [UInt32](repeating: 0, count: degree)
        var power: UInt32 = 1, inversePower: UInt32 = 1
        for i in 0..<degree {
            let r = NTT.bitReverse(i, bits: logN)
            forward[r] = power
            inverse[r] = inversePower
            power = modulus.multiply(power, psi)
            inversePower = modulus.multiply(inversePower, psiInverse)
        }
        forwardTwiddles = forward
        forwardShoup = forward.map { modulus.shoup($0) }
        inverseTwiddles = inverse
        inverseShoup = inverse.map { modulus.shoup($0) }
        let nInverse = try modulus.inverse(UInt32(degree % Int(modulus.value)))
        inverseDegree = nInverse
        inverseDegreeShoup = modulus.shoup(nInverse)
        let folded = modulus.multiply(nInverse, inverse[1])
        inverseDegreeTimesLast = folded
        inverseDegreeTimesLastShoup = modulus.shoup(folded)
    }

    static func bitReverse(_ value: Int, bits: Int) -> Int {
        var v = value, r = 0
        for _ in 0..<bits { r = (r << 1) | (v & 1); v >>= 1 }
        return r
    }

    /// Transforms `values` (N coefficients below q) in place into evaluation form.
    public func forward(_ values: UnsafeMutableBufferPointer<UInt32>) {
        precondition(values.count == degree)
        forwardTwiddles.withUnsafeBufferPointer { w in
            forwardShoup.withUnsafeBufferPointer { ws in
                netext_he_ntt_forward(values.baseAddress!, degree, w.baseAddress!, ws.baseAddress!, modulus.value)
            }
        }
    }

    /// Transforms `values` (N evaluations below q) in place back into coefficient form.
    public func inverse(_ values: UnsafeMutableBufferPointer<UInt32>) {
        precondition(values.count == degree)
        inverseTwiddles.withUnsafeBufferPointer { w in
            inverseShoup.withUnsafeBufferPointer { ws in
                netext_he_ntt_inverse(
                    values.baseAddress!, degree, w.baseAddress!, ws.baseAddress!, modulus.value,
                    inverseDegree, inverseDegreeShoup, inverseDegreeTimesLast, inverseDegreeTimesLastShoup)
            }
        }
    }
}
