import Testing
@testable import HomomorphicEncryption

@Suite("Modular arithmetic and primes")
struct ArithmeticTests {
    @Test func reductionMatchesRemainderForRandomValues() throws {
        var rng = ChaCha20Generator(seed: [UInt8](repeating: 7, count: 32))
        for bits in [2, 17, 27, 28, 30] {
            let value = bits == 30 ? (1 << 30) - 35 : UInt32((1 << bits) - 1)
            let q = try Modulus(value)
            for _ in 0..<2000 {
                let x = rng.next()
                #expect(q.reduce(x) == UInt32(x % UInt64(value)))
                let a = UInt32(rng.next() % UInt64(value)), b = UInt32(rng.next() % UInt64(value))
                #expect(q.multiply(a, b) == UInt32(UInt64(a) * UInt64(b) % UInt64(value)))
                #expect(q.add(a, b) == UInt32((UInt64(a) + UInt64(b)) % UInt64(value)))
                #expect(q.subtract(a, b) == UInt32((UInt64(a) + UInt64(value) - UInt64(b)) % UInt64(value)))
                #expect(q.multiplyShoup(a, b, q.shoup(b)) == q.multiply(a, b))
            }
        }
    }

    @Test func modulusRejectsOutOfRangeValues() {
        #expect(throws: HomomorphicEncryptionError.self) { try Modulus(1) }
        #expect(throws: HomomorphicEncryptionError.self) { try Modulus(1 << 30) }
    }

    @Test func primalityAgreesWithTrialDivision() {
        func slow(_ n: UInt32) -> Bool {
            if n < 2 { return false }
            var d: UInt32 = 2
            while d * d <= n { if n % d == 0 { return false }; d += 1 }
            return true
        }
        for n in UInt32(0)..<5000 { #expect(Primes.isPrime(n) == slow(n), "n = \(n)") }
        // Strong pseudoprimes to small bases and known primes near 2^30.
        for n: UInt32 in [2_047, 1_373_653, 25_326_001, 3_215_031_751] { #expect(!Primes.isPrime(n)) }
        #expect(Primes.isPrime(1_073_741_789))
        #expect(Primes.isPrime(134_176_769) && Primes.isPrime(268_369_921) && Primes.isPrime(268_361_729))
    }

    @Test func nttFriendlyPrimesAreLargestFirstAndCongruent() throws {
        let primes = try Primes.nttFriendly(bits: 28, degree: 4096, count: 3)
        #expect(primes == primes.sorted(by: >))
        for q in primes {
            #expect(Primes.isPrime(q) && (q - 1) % 8192 == 0 && q >> 27 == 1)
        }
        // Apple's n_4096 parameters use the two largest 28-bit ones.
        #expect(Array(primes.prefix(2)) == [268_369_921, 268_361_729])
    }

    @Test func primitiveRootHasExactOrder() throws {
        let q = try Modulus(268_369_921)
        let psi = try Primes.minimalPrimitiveRoot(order: 8192, modulus: q)
        #expect(q.power(psi, 8192) == 1)
        #expect(q.power(psi, 4096) == q.value - 1)
    }

    @Test func wideIntegerArithmetic() {
        let a = WideUInt(UInt64.max) * UInt64.max  // (2^64−1)^2
        #expect(a.description == "340282366920938463426481119284349108225")
        let b = a + WideUInt(1)
        #expect(b - a == WideUInt(1))
        #expect(a.quotientAndRemainder(dividingBy: UInt64.max).quotient == WideUInt(UInt64.max))
        #expect((WideUInt(3) * WideUInt(1 << 40) * WideUInt(1 << 40)).bitWidth == 82)
    }

    @Test func chachaMatchesRFC8439KeystreamBlock() {
        // RFC 8439 §2.3.2 uses nonce 000000090000004a00000000 and counter 1; with our zero
        // nonce, check against the all-zero key test vector of RFC 7539 Appendix A.1 #1:
        // key 0, nonce 0, counter 0 → 76 b8 e0 ad a0 f1 3d 90 …
        var g = ChaCha20Generator(seed: [UInt8](repeating: 0, count: 32))
        let first = g.nextWord(), second = g.nextWord()
        #expect(first == 0xade0_b876)
        #expect(second == 0x903d_f1a0)
    }
}
