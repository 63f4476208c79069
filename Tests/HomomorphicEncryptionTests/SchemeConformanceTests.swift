import Testing
@testable import HomomorphicEncryption

/// One body of checks for any `HeScheme`: every operation agrees with exact arithmetic in
/// Z_t[X]/(X^N + 1) (computed by `FakeScheme`, whose own results are checked against the
/// schoolbook product).
func checkSchemeMatchesPlaintextArithmetic<Scheme: HeScheme>(_ scheme: Scheme) throws {
    let n = scheme.degree, t = scheme.plaintextModulusValue
    let model = FakeScheme(degree: n, plaintextModulus: t, levels: scheme.maximumLevel)
    var rng = ChaCha20Generator.systemSeeded()
    let secretKey = scheme.generateSecretKey()
    let elements = [n + 1, n / 2 + 1, 3]
    let key = try scheme.generateEvaluationKey(galoisElements: elements, relinearization: true, secretKey: secretKey)
    let modelKey = model.generateEvaluationKey(galoisElements: elements, relinearization: true, secretKey: ())
    let a = randomValues(n, below: t, &rng), b = randomValues(n, below: t, &rng)
    let ca = try scheme.encrypt(coefficients: a, secretKey: secretKey)
    let cb = try scheme.encrypt(coefficients: b, secretKey: secretKey)
    let ma = try model.encrypt(coefficients: a, secretKey: ()), mb = try model.encrypt(coefficients: b, secretKey: ())
    func same(_ c: Scheme.CiphertextType, _ m: FakeScheme.Ciphertext, _ what: String) {
        #expect(scheme.decryptCoefficients(c, secretKey: secretKey) == m.coefficients, "\(what)")
        #expect(scheme.noiseBudget(c, secretKey: secretKey) > 0, "\(what): noise budget exhausted")
    }
    same(ca, ma, "encrypt")
    same(try scheme.add(ca, cb), try model.add(ma, mb), "add")
    same(try scheme.subtract(ca, cb), try model.subtract(ma, mb), "subtract")
    for power in [1, -1, 5, -n + 3] {
        same(scheme.multiplyByMonomial(ca, power: power), model.multiplyByMonomial(ma, power: power), "X^\(power)")
    }
    for element in elements {
        same(try scheme.applyGalois(ca, element: element, key: key), try model.applyGalois(ma, element: element, key: modelKey), "Galois \(element)")
    }
    let plain = [try scheme.preparePlaintext(coefficients: b), nil, try scheme.preparePlaintext(coefficients: a)]
    let modelPlain = [try model.preparePlaintext(coefficients: b), nil, try model.preparePlaintext(coefficients: a)]
    same(try scheme.dotProduct(plain, [ca, cb, cb]), try model.dotProduct(modelPlain, [ma, mb, mb]), "plaintext dot product")
    same(try scheme.dotProduct([ca, cb], [cb, ca], key: key), try model.dotProduct([ma, mb], [mb, ma], key: modelKey), "ciphertext dot product")
    same(try scheme.modSwitchDown(ca, toLevel: 1), try model.modSwitchDown(ma, toLevel: 1), "modulus switch")
    #expect(throws: HomomorphicEncryptionError.missingGaloisKey(element: 5)) { try scheme.applyGalois(ca, element: 5, key: key) }
}

@Suite("Scheme conformance (fake and BFV run the same checks)")
struct SchemeConformanceTests {
    @Test func fakeSchemeMatchesSchoolbookProducts() throws {
        let model = FakeScheme(degree: 32, plaintextModulus: 17)
        var rng = ChaCha20Generator.systemSeeded()
        let a = randomValues(32, below: 17, &rng), b = randomValues(32, below: 17, &rng)
        #expect(model.product(a, b) == plaintextProduct(a, b, t: 17))
    }

    @Test func fakeScheme() throws {
        try checkSchemeMatchesPlaintextArithmetic(FakeScheme(degree: 64, plaintextModulus: 257))
    }

    @Test(arguments: BFVTests.parameterSets)
    func bfv(parameters: EncryptionParameters) throws {
        try checkSchemeMatchesPlaintextArithmetic(try BFVContext(parameters: parameters))
    }
}

@Suite("Production parameter sets")
struct ProductionParameterTests {
    /// Every operation at the secure parameter sets, with sparse plaintexts so the exact model
    /// stays cheap in debug builds.
    @Test(arguments: [EncryptionParameters.n4096LogQ27_28_28LogT5, .n8192LogQ6x30LogT17])
    func everyOperationRoundTrips(parameters: EncryptionParameters) throws {
        let context = try BFVContext(parameters: parameters)
        let n = context.degree, t = parameters.plaintextModulus
        let model = FakeScheme(degree: n, plaintextModulus: t, levels: context.maximumLevel)
        var rng = ChaCha20Generator.systemSeeded()
        func sparse() -> [UInt64] {
            var values = [UInt64](repeating: 0, count: n)
            for _ in 0..<12 { values[Int(rng.nextWord()) % n] = UInt64(rng.nextWord() % t) }
            return values
        }
        let secretKey = context.generateSecretKey()
        let key = try context.generateEvaluationKey(galoisElements: [n + 1, 3], relinearization: true, secretKey: secretKey)
        let modelKey = model.generateEvaluationKey(galoisElements: [n + 1, 3], relinearization: true, secretKey: ())
        let a = sparse(), b = sparse()
        let ca = try context.encrypt(coefficients: a, secretKey: secretKey)
        let cb = context.encrypt(try context.encode(coefficients: b), publicKey: context.generatePublicKey(secretKey: secretKey))
        let ma = try model.encrypt(coefficients: a, secretKey: ()), mb = try model.encrypt(coefficients: b, secretKey: ())
        #expect(context.decryptCoefficients(ca, secretKey: secretKey) == a)
        #expect(context.decryptCoefficients(try context.add(ca, cb), secretKey: secretKey) == (try model.add(ma, mb)).coefficients)
        let product = try context.multiply(ca, plaintext: context.prepare(try context.encode(coefficients: b)))
        #expect(context.decryptCoefficients(product, secretKey: secretKey) == model.product(a, b))
        let squared = try context.relinearize(try context.multiply(ca, cb), key: key)
        #expect(context.decryptCoefficients(squared, secretKey: secretKey) == model.product(a, b))
        #expect(context.noiseBudget(squared, secretKey: secretKey) > 0)
        for element in [n + 1, 3] {
            #expect(context.decryptCoefficients(try context.applyGalois(ca, element: element, key: key), secretKey: secretKey)
                    == (try model.applyGalois(ma, element: element, key: modelKey)).coefficients)
        }
        let low = try context.modSwitchDown(ca, toLevel: 1)
        #expect(context.decryptCoefficients(low, secretKey: secretKey) == a)
        #expect(context.decrypt(try context.deserialize(context.serialize(low, forDecryption: true)), secretKey: secretKey)
                == context.decrypt(low, secretKey: secretKey))
        if context.plaintextTransform != nil {
            let slots = (0..<n).map { _ in UInt64(rng.nextWord() % t) }
            let encrypted = context.encrypt(try context.encode(simd: slots), secretKey: secretKey)
            #expect(try context.decodeSIMD(context.decrypt(encrypted, secretKey: secretKey)) == slots)
        }
    }
}
