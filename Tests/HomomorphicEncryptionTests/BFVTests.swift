import Testing
@testable import HomomorphicEncryption

/// Negacyclic product of two plaintexts modulo t.
func plaintextProduct(_ a: [UInt64], _ b: [UInt64], t: UInt64) -> [UInt64] {
    let n = a.count
    var out = [UInt64](repeating: 0, count: n)
    for i in 0..<n where a[i] != 0 {
        for j in 0..<n {
            let p = a[i] * b[j] % t
            let k = i + j
            if k < n { out[k] = (out[k] + p) % t } else { out[k - n] = (out[k - n] + t - p) % t }
        }
    }
    return out
}

func randomValues(_ count: Int, below t: UInt32, _ rng: inout ChaCha20Generator) -> [UInt64] {
    (0..<count).map { _ in UInt64(rng.nextWord() % t) }
}

@Suite("BFV")
struct BFVTests {
    static let parameterSets: [EncryptionParameters] = [.insecureN64, .insecureN256T17]

    @Test(arguments: parameterSets)
    func secretAndPublicKeyEncryptionRoundTrip(parameters: EncryptionParameters) throws {
        let context = try BFVContext(parameters: parameters)
        let secretKey = context.generateSecretKey()
        let publicKey = context.generatePublicKey(secretKey: secretKey)
        var rng = ChaCha20Generator.systemSeeded()
        for _ in 0..<3 {
            let values = randomValues(context.degree, below: parameters.plaintextModulus, &rng)
            let plaintext = try context.encode(coefficients: values)
            let symmetric = context.encrypt(plaintext, secretKey: secretKey)
            #expect(context.decodeCoefficients(context.decrypt(symmetric, secretKey: secretKey)) == values)
            #expect(context.noiseBudget(symmetric, secretKey: secretKey) > 20)
            let asymmetric = context.encrypt(plaintext, publicKey: publicKey)
            #expect(context.decodeCoefficients(context.decrypt(asymmetric, secretKey: secretKey)) == values)
            #expect(context.noiseBudget(asymmetric, secretKey: secretKey) > 20)
        }
    }

    @Test func seededCiphertextRegeneratesItsUniformHalf() throws {
        let context = try BFVContext(parameters: .insecureN64)
        let secretKey = context.generateSecretKey()
        let ciphertext = context.encrypt(try context.encode(coefficients: [1, 2, 3]), secretKey: secretKey)
        let seed = try #require(ciphertext.seed)
        #expect(context.expandSeededPolynomial(seed: seed, level: ciphertext.level) == ciphertext.polys[1])
    }

    @Test func wrongSecretKeyDoesNotDecrypt() throws {
        let context = try BFVContext(parameters: .insecureN256T17)
        let values = [UInt64](repeating: 5, count: 256)
        let ciphertext = context.encrypt(try context.encode(coefficients: values), secretKey: context.generateSecretKey())
        let other = context.generateSecretKey()
        #expect(context.decodeCoefficients(context.decrypt(ciphertext, secretKey: other)) != values)
        #expect(context.noiseBudget(ciphertext, secretKey: other) == 0)
    }

    @Test(arguments: parameterSets)
    func additionAndPlaintextProductsMatchThePlaintextRing(parameters: EncryptionParameters) throws {
        let context = try BFVContext(parameters: parameters)
        let t = UInt64(parameters.plaintextModulus)
        let secretKey = context.generateSecretKey()
        var rng = ChaCha20Generator.systemSeeded()
        let a = randomValues(context.degree, below: parameters.plaintextModulus, &rng)
        let b = randomValues(context.degree, below: parameters.plaintextModulus, &rng)
        let ca = context.encrypt(try context.encode(coefficients: a), secretKey: secretKey)
        let cb = context.encrypt(try context.encode(coefficients: b), secretKey: secretKey)
        let sum = try context.add(ca, cb)
        #expect(context.decodeCoefficients(context.decrypt(sum, secretKey: secretKey)) == zip(a, b).map { ($0 + $1) % t })
        let difference = try context.subtract(ca, cb)
        #expect(context.decodeCoefficients(context.decrypt(difference, secretKey: secretKey)) == zip(a, b).map { ($0 + t - $1) % t })
        let plus = context.add(ca, plaintext: try context.encode(coefficients: b))
        #expect(context.decodeCoefficients(context.decrypt(plus, secretKey: secretKey)) == zip(a, b).map { ($0 + $1) % t })
        let product = try context.multiply(ca, plaintext: context.prepare(try context.encode(coefficients: b)))
        #expect(context.decodeCoefficients(context.decrypt(product, secretKey: secretKey)) == plaintextProduct(a, b, t: t))
        let before = context.noiseBudget(ca, secretKey: secretKey)
        let after = context.noiseBudget(product, secretKey: secretKey)
        #expect(after < before && after > 0)
    }

    @Test(arguments: parameterSets)
    func modulusSwitchingKeepsThePlaintext(parameters: EncryptionParameters) throws {
        let context = try BFVContext(parameters: parameters)
        let secretKey = context.generateSecretKey()
        var rng = ChaCha20Generator.systemSeeded()
        let values = randomValues(context.degree, below: parameters.plaintextModulus, &rng)
        var ciphertext = context.encrypt(try context.encode(coefficients: values), secretKey: secretKey)
        while ciphertext.level > 1 {
            ciphertext = try context.modSwitchDown(ciphertext)
            #expect(context.decodeCoefficients(context.decrypt(ciphertext, secretKey: secretKey)) == values)
        }
        #expect(throws: HomomorphicEncryptionError.cannotSwitchModulus(level: 1)) { try context.modSwitchDown(ciphertext) }
        // Switched in coefficient form too.
        var coefficientForm = context.encrypt(try context.encode(coefficients: values), secretKey: secretKey)
        context.convert(&coefficientForm, toNTT: false)
        let switched = try context.modSwitchDown(coefficientForm)
        #expect(context.decodeCoefficients(context.decrypt(switched, secretKey: secretKey)) == values)
    }

    @Test func automorphismOnEvaluationsEqualsAutomorphismOnCoefficients() throws {
        let context = try BFVContext(parameters: .insecureN64)
        var stream = SeedStream(seed: SeedStream.randomSeed())
        var poly = Sampling.uniform(degree: 64, moduli: context.moduli[...], isNTT: false, from: &stream)
        for element in [3, 5, 9, 65, 127] {
            var viaCoefficients = context.applyAutomorphismToCoefficients(poly, element: element)
            viaCoefficients.forwardNTT(context.transforms)
            poly.forwardNTT(context.transforms)
            #expect(context.applyAutomorphismToEvaluations(poly, element: element) == viaCoefficients)
            poly.inverseNTT(context.transforms)
        }
    }

    @Test(arguments: parameterSets)
    func galoisAutomorphismsUnderEncryption(parameters: EncryptionParameters) throws {
        let context = try BFVContext(parameters: parameters)
        let secretKey = context.generateSecretKey()
        let elements = [3, context.degree + 1, 2 * context.degree - 1]
        let evaluationKey = try context.generateEvaluationKey(galoisElements: elements, relinearization: false, secretKey: secretKey)
        var rng = ChaCha20Generator.systemSeeded()
        let values = randomValues(context.degree, below: parameters.plaintextModulus, &rng)
        let plaintext = try context.encode(coefficients: values)
        let ciphertext = context.encrypt(plaintext, secretKey: secretKey)
        for element in elements {
            let rotated = try context.applyGalois(ciphertext, element: element, key: evaluationKey)
            #expect(context.decrypt(rotated, secretKey: secretKey) == (try context.applyGalois(plaintext, element: element)))
            #expect(context.noiseBudget(rotated, secretKey: secretKey) > 10)
            // And after dropping a prime (keys for the top level still apply).
            let lower = try context.modSwitchDown(ciphertext)
            let rotatedLower = try context.applyGalois(lower, element: element, key: evaluationKey)
            #expect(context.decrypt(rotatedLower, secretKey: secretKey) == (try context.applyGalois(plaintext, element: element)))
        }
        #expect(throws: HomomorphicEncryptionError.missingGaloisKey(element: 5)) {
            try context.applyGalois(ciphertext, element: 5, key: evaluationKey)
        }
        #expect(throws: HomomorphicEncryptionError.invalidGaloisElement(element: 4, degree: context.degree)) {
            try context.applyGalois(ciphertext, element: 4, key: evaluationKey)
        }
    }

    @Test func relinearizationRemovesTheThirdPolynomial() throws {
        let context = try BFVContext(parameters: .insecureN64)
        let secretKey = context.generateSecretKey()
        let evaluationKey = try context.generateEvaluationKey(galoisElements: [], relinearization: true, secretKey: secretKey)
        var rng = ChaCha20Generator.systemSeeded()
        let values = randomValues(64, below: 257, &rng)
        let fresh = context.encrypt(try context.encode(coefficients: values), secretKey: secretKey)
        // (c_0 − r·s², c_1, r) has the same phase as (c_0, c_1) for any r.
        var stream = SeedStream(seed: SeedStream.randomSeed())
        let r = Sampling.uniform(degree: 64, moduli: context.moduli[..<fresh.level], isNTT: true, from: &stream)
        var rs2 = r
        rs2.multiply(secretKey.poly, moduli: context.moduli)
        rs2.multiply(secretKey.poly, moduli: context.moduli)
        var c0 = fresh.polys[0]
        c0.subtract(rs2, moduli: context.moduli)
        let three = Ciphertext(polys: [c0, fresh.polys[1], r])
        #expect(context.decodeCoefficients(context.decrypt(three, secretKey: secretKey)) == values)
        let relinearized = try context.relinearize(three, key: evaluationKey)
        #expect(relinearized.polys.count == 2)
        #expect(context.decodeCoefficients(context.decrypt(relinearized, secretKey: secretKey)) == values)
        #expect(throws: HomomorphicEncryptionError.missingRelinearizationKey) {
            try context.relinearize(three, key: EvaluationKey())
        }
    }

    @Test func simdEncodingMultipliesAndRotatesSlots() throws {
        let context = try BFVContext(parameters: .insecureN64)
        let secretKey = context.generateSecretKey()
        var rng = ChaCha20Generator.systemSeeded()
        let a = randomValues(64, below: 257, &rng), b = randomValues(64, below: 257, &rng)
        let pa = try context.encode(simd: a)
        #expect(try context.decodeSIMD(pa) == a)
        let ca = context.encrypt(pa, secretKey: secretKey)
        let product = try context.multiply(ca, plaintext: context.prepare(try context.encode(simd: b)))
        #expect(try context.decodeSIMD(context.decrypt(product, secretKey: secretKey)) == zip(a, b).map { $0 * $1 % 257 })
        let rotate = context.galoisElement(rotatingColumnsBy: 1)
        let key = try context.generateEvaluationKey(galoisElements: [rotate, context.galoisElementSwappingRows], relinearization: false, secretKey: secretKey)
        let rotated = try context.decodeSIMD(context.decrypt(try context.applyGalois(ca, element: rotate, key: key), secretKey: secretKey))
        #expect(Array(rotated[0..<32]) == Array(a[1..<32]) + [a[0]])
        #expect(Array(rotated[32..<64]) == Array(a[33..<64]) + [a[32]])
        let swapped = try context.decodeSIMD(context.decrypt(try context.applyGalois(ca, element: context.galoisElementSwappingRows, key: key), secretKey: secretKey))
        #expect(swapped == Array(a[32..<64]) + Array(a[0..<32]))
        #expect(throws: HomomorphicEncryptionError.self) {
            try BFVContext(parameters: .insecureN256T17).encode(simd: [1])
        }
    }

    @Test func encodingRejectsValuesOutsideThePlaintextSpace() throws {
        let context = try BFVContext(parameters: .insecureN256T17)
        #expect(throws: HomomorphicEncryptionError.plaintextOutOfRange(index: 1, value: 17, plaintextModulus: 17)) {
            try context.encode(coefficients: [1, 17])
        }
        #expect(throws: HomomorphicEncryptionError.wrongCoefficientCount(got: 257, expected: 256)) {
            try context.encode(coefficients: [UInt64](repeating: 0, count: 257))
        }
    }

    @Test func parameterValidationNamesTheProblem() throws {
        _ = EncryptionParameters.n4096LogQ27_28_28LogT5
        _ = EncryptionParameters.n8192LogQ6x30LogT17
        // 3 × 30-bit + special at N = 4096 exceeds the post-quantum 101-bit bound.
        let primes = try Primes.nttFriendly(bits: 30, degree: 4096, count: 4)
        #expect(throws: HomomorphicEncryptionError.self) {
            try EncryptionParameters(name: "too_big", polyDegree: 4096, plaintextModulus: 17,
                                     coefficientModuli: Array(primes.prefix(3)), specialModulus: primes[3], securityLevel: .quantum128)
        }
        #expect(throws: HomomorphicEncryptionError.self) {
            try EncryptionParameters(name: "small_but_claimed", polyDegree: 64, plaintextModulus: 17,
                                     coefficientModuli: [primes[0]], specialModulus: primes[1], securityLevel: .unchecked)
        }
        #expect(throws: HomomorphicEncryptionError.self) {
            try EncryptionParameters(name: "insecure_not_ntt", polyDegree: 64, plaintextModulus: 17,
                                     coefficientModuli: [1_000_003], specialModulus: primes[1], securityLevel: .unchecked)
        }
    }
}

@Suite("BFV noise figures")
struct BFVNoiseFigures {
    @Test func noiseBudgetsAreInTheExpectedRange() throws {
        let context = try BFVContext(parameters: .insecureN256T17)
        let secretKey = context.generateSecretKey()
        let ct = context.encrypt(try context.encode(coefficients: [1, 2, 3]), secretKey: secretKey)
        let fresh = context.noiseBudget(ct, secretKey: secretKey)
        // log2(Q) ≈ 56, t = 17 (~4 bits), fresh noise ~ 2^4 : a fresh budget near 46 bits.
        #expect(fresh >= 40 && fresh <= 52, "fresh budget \(fresh)")
        let lower = try context.modSwitchDown(ct)
        let switched = context.noiseBudget(lower, secretKey: secretKey)
        #expect(switched >= 10 && switched <= 24, "after switching \(switched)")
    }
}

@Suite("BFV ciphertext products")
struct BFVProductTests {
    @Test(arguments: BFVTests.parameterSets)
    func productOfCiphertextsDecryptsToThePlaintextProduct(parameters: EncryptionParameters) throws {
        let context = try BFVContext(parameters: parameters)
        let t = UInt64(parameters.plaintextModulus)
        let secretKey = context.generateSecretKey()
        let key = try context.generateEvaluationKey(galoisElements: [], relinearization: true, secretKey: secretKey)
        var rng = ChaCha20Generator.systemSeeded()
        let a = randomValues(context.degree, below: parameters.plaintextModulus, &rng)
        let b = randomValues(context.degree, below: parameters.plaintextModulus, &rng)
        let ca = context.encrypt(try context.encode(coefficients: a), secretKey: secretKey)
        let cb = context.encrypt(try context.encode(coefficients: b), secretKey: secretKey)
        let product = try context.multiply(ca, cb)
        #expect(product.polys.count == 3)
        let expected = plaintextProduct(a, b, t: t)
        #expect(context.decodeCoefficients(context.decrypt(product, secretKey: secretKey)) == expected)
        let relinearized = try context.relinearize(product, key: key)
        #expect(context.decodeCoefficients(context.decrypt(relinearized, secretKey: secretKey)) == expected)
        let budget = context.noiseBudget(relinearized, secretKey: secretKey)
        #expect(budget > 0, "budget after one product: \(budget)")
        // At a lower level too.
        let lowA = try context.modSwitchDown(ca), lowB = try context.modSwitchDown(cb)
        if lowA.level >= 1, context.noiseBudget(lowA, secretKey: secretKey) > 15 {
            let low = try context.multiply(lowA, lowB)
            #expect(context.decodeCoefficients(context.decrypt(low, secretKey: secretKey)) == expected)
        }
    }

    @Test func accumulatedProductsEqualTheSumOfProducts() throws {
        let context = try BFVContext(parameters: .insecureN64)
        let secretKey = context.generateSecretKey()
        var rng = ChaCha20Generator.systemSeeded()
        var accumulator = context.makeProductAccumulator(level: context.maximumLevel)
        var expected = [UInt64](repeating: 0, count: 64)
        for _ in 0..<8 {
            let a = randomValues(64, below: 257, &rng), b = randomValues(64, below: 257, &rng)
            let ca = context.encrypt(try context.encode(coefficients: a), secretKey: secretKey)
            let cb = context.encrypt(try context.encode(coefficients: b), secretKey: secretKey)
            try context.accumulateProduct(context.extendForMultiplication(ca), context.extendForMultiplication(cb), into: &accumulator)
            expected = zip(expected, plaintextProduct(a, b, t: 257)).map { ($0 + $1) % 257 }
        }
        #expect(accumulator.count == 8)
        #expect(context.decodeCoefficients(context.decrypt(context.finish(accumulator), secretKey: secretKey)) == expected)
    }

    @Test func simdProductsMultiplySlots() throws {
        let context = try BFVContext(parameters: .insecureN64)
        let secretKey = context.generateSecretKey()
        var rng = ChaCha20Generator.systemSeeded()
        let a = randomValues(64, below: 257, &rng), b = randomValues(64, below: 257, &rng)
        let ca = context.encrypt(try context.encode(simd: a), secretKey: secretKey)
        let cb = context.encrypt(try context.encode(simd: b), secretKey: secretKey)
        let product = try context.multiply(ca, cb)
        #expect(try context.decodeSIMD(context.decrypt(product, secretKey: secretKey)) == zip(a, b).map { $0 * $1 % 257 })
    }
}
