import Testing
@testable import HomomorphicEncryption

/// Known-answer values published in Apple's swift-homomorphic-encryption test suite
/// (`Tests/HomomorphicEncryptionTests/NttTests.swift`, `PolyRq+RandomizeTests.swift`,
/// `CoefficientPackingTests.swift`, `RandomTests/NistCtrDrbgTests.swift`). Matching them pins the
/// conventions an Apple client or server relies on: the order of NTT evaluations, the AES-CTR
/// expansion of a seed into a uniform polynomial, and the bit packing of coefficients.
@Suite("Apple interoperability vectors")
struct AppleVectorTests {
    /// Forward NTT of `coefficients` modulo `prime` must give `evaluations` (and back).
    private func checkNTT(prime: UInt32, coefficients: [UInt32], evaluations: [UInt32]) throws {
        let ntt = try NTT(degree: coefficients.count, modulus: try Modulus(prime))
        var values = coefficients
        values.withUnsafeMutableBufferPointer { ntt.forward($0) }
        #expect(values == evaluations, "forward NTT modulo \(prime), N = \(coefficients.count)")
        values.withUnsafeMutableBufferPointer { ntt.inverse($0) }
        #expect(values == coefficients, "inverse NTT modulo \(prime), N = \(coefficients.count)")
    }

    @Test func nttEvaluationOrder() throws {
        try checkNTT(prime: 97, coefficients: [1, 2], evaluations: [45, 54])
        try checkNTT(prime: 113, coefficients: [3, 4], evaluations: [63, 56])
        try checkNTT(prime: 97, coefficients: [1, 2, 3, 4], evaluations: [30, 7, 64, 0])
        try checkNTT(prime: 113, coefficients: [5, 6, 7, 8], evaluations: [108, 31, 103, 4])
        try checkNTT(
            prime: 4_194_353, coefficients: [1, 2, 3, 4, 5, 6, 7, 8],
            evaluations: [3_372_683, 765_982, 387_853, 2_657_954, 2_013_665, 1_280_882, 2_457_874, 3_840_527])
        try checkNTT(
            prime: 536_870_849,
            coefficients: [
                477_051_601, 421_524_611, 456_257_859, 247_136_825, 128_775_020, 76_785_070, 49_764_016, 525_812_772,
                325_605_371, 88_935_943, 255_470_762, 39_507_048, 404_978_219, 379_383_003, 244_420_585, 346_826_612,
            ],
            evaluations: [
                230_846_094, 480_599_401, 157_364_576, 360_442_736, 531_052_463, 294_311_347, 432_899_854, 219_721_533,
                286_807_067, 260_650_843, 362_842_688, 315_862_017, 493_042_020, 520_739_674, 167_758_416, 370_401_491,
            ])
        try checkNTT(
            prime: 769,
            coefficients: [
                401, 203, 221, 352, 487, 151, 405, 356, 343, 424, 635, 757, 457, 280, 624, 353,
                496, 353, 624, 280, 457, 757, 635, 424, 343, 356, 405, 151, 487, 352, 221, 203,
            ],
            evaluations: Array(1...32))
    }
}

extension AppleVectorTests {
    private static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var chars = Array(hex.utf8)
        chars.removeAll { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }
        for i in stride(from: 0, to: chars.count, by: 2) { out.append(UInt8(String(decoding: chars[i..<(i + 2)], as: UTF8.self), radix: 16)!) }
        return out
    }

    /// NIST CAVP CTR_DRBG (AES-128, no derivation function, no reseed, no additional input):
    /// instantiate with the entropy input, generate 512 bits twice; the second output is the
    /// listed ReturnedBits (as reproduced in Apple's `NistCtrDrbgTests.swift`).
    @Test(arguments: [
        ("69a09f6bf5dda15cd4af29e14cf5e0cddd7d07ac39bba587f8bc331104f9c448",
         "f78a4919a6ec899f7b6c69381febbbe083315f3d289e70346db0e4ec4360473ae0b3d916e9b6b964309f753ed66ae59de48da316cc1944bc8dfd0e2575d0ff6d"),
        ("80bfbd340d79888f34f043ed6807a9f28b72b6644d9d9e9d777109482b80788a",
         "80db048d2f130d864b19bfc547c92503e580cb1a8e1f74f3d97fdda6501fb1aa81fcedac0dd18b6ccfdc183ca28a44fc9f3a08834ba8751a2f4495367c54a185"),
        ("a559ac9872791d79197e54da70a8d858fbe39e8514d2c86a7bcffadc68782edf",
         "d14b72e17c2f6f77b46d0717b788420e503bb18de542135f586a90c5c73fceeee50fd1633b5b09ab061b9367ca785ecb400e1f3681583661aaf8352184454ae6"),
        ("42cb183d2a04c89c69efbcec08bee2003b9a1cd56878a774f0162bf70f2c708f",
         "cb4afdec033b42949ebbb27245fd33c1503c1278027e11a1f050e04080abe4850821b71ed5a6bd83da6bde8e56c5faed49da26887028bab807d1ad055e2a8a27"),
    ])
    func counterDRBGMatchesNIST(entropy: String, returned: String) {
        var drbg = CounterDRBG(seed: Self.bytes(entropy))
        _ = drbg.generate(64)
        #expect(drbg.generate(64) == Self.bytes(returned))
    }

    /// Apple's `testRandomizeInteropUniform`: N = 4, primes 11 and 13; the 1st, 1,002nd and
    /// 2,003rd polynomial drawn from one seed's stream (so buffer refills and the DRBG's
    /// per-refill update are exercised, not just the first block).
    @Test(arguments: [
        ("0000000000000000000000000000000000000000000000000000000000000000",
         [[4, 0, 2, 8, 10, 9, 3, 2], [5, 6, 0, 5, 1, 3, 6, 11], [0, 3, 4, 4, 8, 9, 0, 10]]),
        ("0123456789abcdeffedcba987654321000112233445566778899aabbccddeeff",
         [[9, 6, 9, 0, 10, 8, 7, 3], [2, 9, 9, 1, 12, 0, 0, 12], [5, 1, 0, 10, 8, 2, 8, 1]]),
    ])
    func uniformPolynomialFromSeed(seed: String, expected: [[UInt32]]) throws {
        let moduli = [try Modulus(11), try Modulus(13)]
        var stream = SeedStream(seed: Self.bytes(seed))
        var drawn: [[UInt32]] = []
        for index in 0..<2003 {
            let poly = Sampling.uniform(degree: 4, moduli: moduli[...], isNTT: false, from: &stream)
            if index == 0 || index == 1001 || index == 2002 { drawn.append(poly.storage) }
        }
        #expect(drawn == expected)
    }
}

extension AppleVectorTests {
    /// Apple's `coeffsToBytesKAT` (5-bit fields, most significant bit first) and `PolyRq`
    /// serialization rules: a prime of bit width 5 stores each residue in 5 bits.
    @Test func polynomialBitPacking() throws {
        let q = try Modulus(17)
        var poly = RNSPolynomial(degree: 14, moduliCount: 1, isNTT: false)
        poly.storage = [0, 3, 1, 8, 5, 15, 8, 13, 11, 3, 2, 2, 7, 1]
        let bytes = PolynomialCoding.encode(poly, moduli: [q])
        #expect(bytes == [0, 194, 130, 189, 13, 88, 196, 35, 132])
        #expect(try PolynomialCoding.decode(bytes, degree: 14, moduli: [q], what: "vector").storage == poly.storage)
    }

    /// Apple's `testRoundtripKAT`: dropped low bits are cut off (floor), never rounded, so the
    /// value read back stays below the prime: [1, 21, 302, 417] mod 521 with 2 bits dropped reads
    /// back as [0, 20, 300, 416]; and each row ends on a byte boundary.
    @Test func droppedLowBitsAreTruncated() throws {
        let q = try Modulus(521)
        var poly = RNSPolynomial(degree: 4, moduliCount: 1, isNTT: false)
        poly.storage = [1, 21, 302, 417]
        let bytes = PolynomialCoding.encode(poly, moduli: [q], skip: 2)
        #expect(bytes.count == 4)  // 4 × 8 bits
        #expect(try PolynomialCoding.decode(bytes, degree: 4, moduli: [q], skip: 2, what: "vector").storage == [0, 20, 300, 416])
        var two = RNSPolynomial(degree: 4, moduliCount: 2, isNTT: false)
        two.storage = [1, 2, 3, 4, 6, 7, 8, 9]
        let rows = PolynomialCoding.encode(two, moduli: [q, try Modulus(541)])
        #expect(rows.count == 10)  // two rows of 4 × 10 bits, 5 bytes each
        #expect(try PolynomialCoding.decode(rows, degree: 4, moduli: [q, try Modulus(541)], what: "vector").storage == two.storage)
    }
}
