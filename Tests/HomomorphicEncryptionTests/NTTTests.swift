import Testing
@testable import HomomorphicEncryption

/// Schoolbook negacyclic product in Z_q[X]/(X^N + 1).
func naiveNegacyclicProduct(_ a: [UInt32], _ b: [UInt32], modulus q: Modulus) -> [UInt32] {
    let n = a.count
    var out = [UInt32](repeating: 0, count: n)
    for i in 0..<n {
        for j in 0..<n {
            let p = q.multiply(a[i], b[j])
            let k = i + j
            if k < n { out[k] = q.add(out[k], p) } else { out[k - n] = q.subtract(out[k - n], p) }
        }
    }
    return out
}

@Suite("Number-theoretic transform")
struct NTTTests {
    @Test(arguments: [(2, UInt32(5)), (4, UInt32(17)), (8, UInt32(17)), (16, UInt32(97)), (64, UInt32(0)), (256, UInt32(0)), (1024, UInt32(0))])
    func productByNTTMatchesSchoolbook(degree: Int, small: UInt32) throws {
        let value = small != 0 ? small : try Primes.nttFriendly(bits: 30, degree: degree, count: 1)[0]
        let q = try Modulus(value)
        let ntt = try NTT(degree: degree, modulus: q)
        var rng = ChaCha20Generator(seed: [UInt8](repeating: UInt8(degree & 0xFF), count: 32))
        for _ in 0..<3 {
            let a = (0..<degree).map { _ in rng.nextWord() % value }
            let b = (0..<degree).map { _ in rng.nextWord() % value }
            var fa = a, fb = b
            fa.withUnsafeMutableBufferPointer { ntt.forward($0) }
            fb.withUnsafeMutableBufferPointer { ntt.forward($0) }
            #expect(fa.allSatisfy { $0 < value })
            var product = zip(fa, fb).map { q.multiply($0, $1) }
            product.withUnsafeMutableBufferPointer { ntt.inverse($0) }
            #expect(product == naiveNegacyclicProduct(a, b, modulus: q))
            var back = fa
            back.withUnsafeMutableBufferPointer { ntt.inverse($0) }
            #expect(back == a)
        }
    }

    @Test func extremeValuesSurviveLazyReduction() throws {
        let value = try Primes.nttFriendly(bits: 30, degree: 128, count: 1)[0]
        let q = try Modulus(value)
        let ntt = try NTT(degree: 128, modulus: q)
        let a = [UInt32](repeating: value - 1, count: 128)
        var f = a
        f.withUnsafeMutableBufferPointer { ntt.forward($0) }
        f.withUnsafeMutableBufferPointer { ntt.inverse($0) }
        #expect(f == a)
    }
}
