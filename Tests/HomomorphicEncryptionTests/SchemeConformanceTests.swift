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
