import Testing
@testable import HomomorphicEncryption

@Suite("Serialization")
struct SerializationTests {
    @Test(arguments: BFVTests.parameterSets)
    func seededAndFullCiphertextsRoundTrip(parameters: EncryptionParameters) throws {
        let context = try BFVContext(parameters: parameters)
        let secretKey = context.generateSecretKey()
        var rng = ChaCha20Generator.systemSeeded()
        let values = randomValues(context.degree, below: parameters.plaintextModulus, &rng)
        let ciphertext = context.encrypt(try context.encode(coefficients: values), secretKey: secretKey)
        let seeded = context.serialize(ciphertext)
        guard case let .seeded(poly0, seed) = seeded else { Issue.record("fresh ciphertext not seeded"); return }
        #expect(seed.count == 32)
        let bits = parameters.coefficientModuli.reduce(0) { $0 + (32 - $1.leadingZeroBitCount) }
        #expect(poly0.count == (context.degree * bits + 7) / 8)
        let back = try context.deserialize(seeded)
        #expect(back == ciphertext)
        let full = context.serialize(try context.add(ciphertext, ciphertext))
        #expect(context.decodeCoefficients(context.decrypt(try context.deserialize(full), secretKey: secretKey)) == values.map { $0 * 2 % UInt64(parameters.plaintextModulus) })
    }

    @Test func droppingLowBitsKeepsDecryptionAndShrinksResponses() throws {
        for parameters in [EncryptionParameters.insecureN256T17, .n4096LogQ27_28_28LogT5] {
            let context = try BFVContext(parameters: parameters)
            let secretKey = context.generateSecretKey()
            var rng = ChaCha20Generator.systemSeeded()
            for _ in 0..<5 {
                let values = randomValues(context.degree, below: parameters.plaintextModulus, &rng)
                // A ciphertext with some noise: a plaintext product, then down to one prime.
                let product = try context.multiply(
                    context.encrypt(try context.encode(coefficients: values), secretKey: secretKey),
                    plaintext: context.prepare(try context.encode(coefficients: [1, 1, 1])))
                let low = try context.modSwitchDown(product, toLevel: 1)
                let expected = context.decrypt(low, secretKey: secretKey)
                let compact = context.serialize(low, forDecryption: true)
                let plain = context.serialize(low)
                #expect(compact.byteCount < plain.byteCount * 3 / 5, "\(compact.byteCount) vs \(plain.byteCount)")
                #expect(context.decrypt(try context.deserialize(compact), secretKey: secretKey) == expected)
            }
        }
    }

    @Test func evaluationKeysRoundTripAndStillWork() throws {
        let context = try BFVContext(parameters: .insecureN64)
        let secretKey = context.generateSecretKey()
        let key = try context.generateEvaluationKey(galoisElements: [3, 65], relinearization: true, secretKey: secretKey)
        let serialized = context.serialize(key)
        let back = try context.deserialize(serialized)
        #expect(back == key)
        let ciphertext = context.encrypt(try context.encode(coefficients: [1, 2, 3]), secretKey: secretKey)
        let rotated = try context.applyGalois(ciphertext, element: 65, key: back)
        #expect(context.decrypt(rotated, secretKey: secretKey) == (try context.applyGalois(try context.encode(coefficients: [1, 2, 3]), element: 65)))
    }

    @Test func malformedBytesAreRefusedWithTheReason() throws {
        let context = try BFVContext(parameters: .insecureN64)
        let secretKey = context.generateSecretKey()
        let ciphertext = context.encrypt(try context.encode(coefficients: [1]), secretKey: secretKey)
        guard case let .seeded(poly0, seed) = context.serialize(ciphertext) else { return }
        #expect(throws: HomomorphicEncryptionError.self) { try context.deserialize(.seeded(poly0: Array(poly0.dropLast()), seed: seed)) }
        #expect(throws: HomomorphicEncryptionError.malformed("ciphertext seed has 31 bytes, expected 32")) {
            try context.deserialize(.seeded(poly0: poly0, seed: Array(seed.dropLast())))
        }
        // All-ones bytes: the first coefficient exceeds its prime.
        #expect(throws: HomomorphicEncryptionError.self) {
            try context.deserialize(.seeded(poly0: [UInt8](repeating: 0xFF, count: poly0.count), seed: seed))
        }
        #expect(throws: HomomorphicEncryptionError.self) { try context.deserialize(.full(polys: [1, 2, 3], skipLSBs: [0, 0])) }
        #expect(throws: HomomorphicEncryptionError.self) { try context.deserialize(.full(polys: [], skipLSBs: [0])) }
        #expect(throws: HomomorphicEncryptionError.self) { try context.deserialize(.full(polys: [], skipLSBs: [40, 0])) }
        // The 2-byte polynomial count must agree with the skip list.
        guard case let .full(polys, _) = context.serialize(try context.modSwitchDown(ciphertext, toLevel: 1)) else { return }
        #expect(polys.prefix(2) == [2, 0])
        #expect(throws: HomomorphicEncryptionError.malformed("full ciphertext says 3 polynomials at offset 0 but lists 2 skip counts")) {
            try context.deserialize(.full(polys: [3, 0] + polys.dropFirst(2), skipLSBs: [0, 0]))
        }
    }

    @Test func randomBytesNeverCrashTheDecoder() throws {
        let context = try BFVContext(parameters: .insecureN64)
        var rng = ChaCha20Generator.systemSeeded()
        let sizes = [0, 1, 7, PolynomialCoding.byteCount(degree: 64, moduli: context.ciphertextModuli(level: 3), skip: 0),
                     PolynomialCoding.byteCount(degree: 64, moduli: context.ciphertextModuli(level: 1), skip: 0)]
        var decoded = 0
        for trial in 0..<300 {
            let size = sizes[trial % sizes.count] * (trial % 3 == 0 ? 2 : 1)
            let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.nextWord() >> (trial % 5)) }
            if (try? context.deserialize(.seeded(poly0: bytes, seed: [UInt8](repeating: 1, count: 32)))) != nil { decoded += 1 }
            _ = try? context.deserialize(.full(polys: bytes, skipLSBs: [UInt32(trial % 4), 0]))
            // With a valid 2-byte count in front, so the polynomial decoder itself is exercised.
            if (try? context.deserialize(.full(polys: [2, 0] + bytes + bytes, skipLSBs: [0, 0]))) != nil { decoded += 1 }
        }
        #expect(decoded > 0)  // small values (shifted right) do decode
    }
}
