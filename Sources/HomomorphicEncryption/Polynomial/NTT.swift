/// The negacyclic number-theoretic transform over `Z_q[X]/(X^N + 1)` for one prime `q`.
///
/// Forward: Cooley–Tukey, natural order in, bit-reversed order out; inverse: Gentleman–Sande,
/// bit-reversed in, natural out (Longa and Naehrig, "Speeding up the Number Theoretic Transform
/// for Faster Ideal Lattice-Based Cryptography", Algorithms 1 and 2), with Harvey's lazy
/// butterflies (values kept below `4q`) and Shoup multiplication by precomputed twiddles.
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
        let q = modulus.value, twoQ = q &* 2
        let n = degree
        forwardTwiddles.withUnsafeBufferPointer { w in
            forwardShoup.withUnsafeBufferPointer { ws in
                let a = values.baseAddress!
                var t = n
                var m = 1
                while m < n {
                    t >>= 1
                    for i in 0..<m {
                        let j1 = 2 &* i &* t
                        let s = w[m &+ i], sp = ws[m &+ i]
                        var x = a + j1
                        var y = x + t
                        for _ in 0..<t {
                            var u = x.pointee
                            u = u >= twoQ ? u &- twoQ : u
                            let v = modulus.multiplyShoupLazy(y.pointee, s, sp)
                            x.pointee = u &+ v
                            y.pointee = u &+ twoQ &- v
                            x += 1; y += 1
                        }
                    }
                    m <<= 1
                }
                for j in 0..<n {
                    var v = a[j]
                    v = v >= twoQ ? v &- twoQ : v
                    a[j] = v >= q ? v &- q : v
                }
            }
        }
    }

    /// Transforms `values` (N evaluations below q) in place back into coefficient form.
    public func inverse(_ values: UnsafeMutableBufferPointer<UInt32>) {
        precondition(values.count == degree)
        let q = modulus.value, twoQ = q &* 2
        let n = degree
        inverseTwiddles.withUnsafeBufferPointer { w in
            inverseShoup.withUnsafeBufferPointer { ws in
                let a = values.baseAddress!
                var t = 1
                var m = n
                while m > 2 {
                    var j1 = 0
                    let h = m >> 1
                    for i in 0..<h {
                        let s = w[h &+ i], sp = ws[h &+ i]
                        var x = a + j1
                        var y = x + t
                        for _ in 0..<t {
                            let u = x.pointee, v = y.pointee
                            var sum = u &+ v
                            sum = sum >= twoQ ? sum &- twoQ : sum
                            x.pointee = sum
                            y.pointee = modulus.multiplyShoupLazy(u &+ twoQ &- v, s, sp)
                            x += 1; y += 1
                        }
                        j1 = j1 &+ 2 &* t
                    }
                    t <<= 1
                    m = h
                }
                // Last stage with N^−1 folded in.
                let half = n >> 1
                for j in 0..<half {
                    let u = a[j], v = a[j &+ half]
                    var sum = u &+ v
                    sum = sum >= twoQ ? sum &- twoQ : sum
                    a[j] = modulus.multiplyShoup(sum, inverseDegree, inverseDegreeShoup)
                    a[j &+ half] = modulus.multiplyShoup(
                        u &+ twoQ &- v, inverseDegreeTimesLast, inverseDegreeTimesLastShoup)
                }
            }
        }
    }
}
