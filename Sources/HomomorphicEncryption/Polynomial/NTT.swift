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
        forwardTwiddles.withUnsafeBufferPointer { wBuffer in
            forwardShoup.withUnsafeBufferPointer { wsBuffer in
                let a = values.baseAddress!
                let w = wBuffer.baseAddress!, ws = wsBuffer.baseAddress!
                var t = n
                var m = 1
                while m < n {
                    t >>= 1
                    if t >= 4 {
                        for i in 0..<m {
                            let s = w[m &+ i], sp = UInt64(ws[m &+ i])
                            let x = a + 2 &* i &* t
                            let y = x + t
                            var j = 0
                            while j < t {
                                var u = x[j]
                                u = u >= twoQ ? u &- twoQ : u
                                let v = y[j]
                                let estimate = UInt32(truncatingIfNeeded: (UInt64(v) &* sp) &>> 32)
                                let product = v &* s &- estimate &* q
                                x[j] = u &+ product
                                y[j] = u &+ twoQ &- product
                                j &+= 1
                            }
                        }
                    } else {
                        for i in 0..<m {
                            let s = w[m &+ i], sp = UInt64(ws[m &+ i])
                            let x = a + 2 &* i &* t
                            for j in 0..<t {
                                var u = x[j]
                                u = u >= twoQ ? u &- twoQ : u
                                let v = x[j &+ t]
                                let estimate = UInt32(truncatingIfNeeded: (UInt64(v) &* sp) &>> 32)
                                let product = v &* s &- estimate &* q
                                x[j] = u &+ product
                                x[j &+ t] = u &+ twoQ &- product
                            }
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
        inverseTwiddles.withUnsafeBufferPointer { wBuffer in
            inverseShoup.withUnsafeBufferPointer { wsBuffer in
                let a = values.baseAddress!
                let w = wBuffer.baseAddress!, ws = wsBuffer.baseAddress!
                var t = 1
                var m = n
                while m > 2 {
                    let h = m >> 1
                    for i in 0..<h {
                        let s = w[h &+ i], sp = UInt64(ws[h &+ i])
                        let x = a + 2 &* i &* t
                        let y = x + t
                        var j = 0
                        while j < t {
                            let u = x[j], v = y[j]
                            var sum = u &+ v
                            sum = sum >= twoQ ? sum &- twoQ : sum
                            x[j] = sum
                            let d = u &+ twoQ &- v
                            let estimate = UInt32(truncatingIfNeeded: (UInt64(d) &* sp) &>> 32)
                            y[j] = d &* s &- estimate &* q
                            j &+= 1
                        }
                    }
                    t <<= 1
                    m = h
                }
                // Last stage with N^−1 folded in.
                let half = n >> 1
                let f = inverseDegree, fs = UInt64(inverseDegreeShoup)
                let g = inverseDegreeTimesLast, gs = UInt64(inverseDegreeTimesLastShoup)
                for j in 0..<half {
                    let u = a[j], v = a[j &+ half]
                    var sum = u &+ v
                    sum = sum >= twoQ ? sum &- twoQ : sum
                    let e1 = UInt32(truncatingIfNeeded: (UInt64(sum) &* fs) &>> 32)
                    var r1 = sum &* f &- e1 &* q
                    r1 = r1 >= q ? r1 &- q : r1
                    let d = u &+ twoQ &- v
                    let e2 = UInt32(truncatingIfNeeded: (UInt64(d) &* gs) &>> 32)
                    var r2 = d &* g &- e2 &* q
                    r2 = r2 >= q ? r2 &- q : r2
                    a[j] = r1
                    a[j &+ half] = r2
                }
            }
        }
    }
}
