import HomomorphicEncryption
import Testing
@testable import PrivateInformationRetrieval

func randomEntries(count: Int, size: Int, _ rng: inout ChaCha20Generator) -> [[UInt8]] {
    (0..<count).map { _ in (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.nextWord()) } }
}

/// Builds a database, asks for `indices` in batches, and checks every answer and the noise left.
func checkIndexPir<Scheme: HeScheme>(
    _ scheme: Scheme, entryCount: Int, entrySize: Int, batchSize: Int, dimensionCount: Int, queries: Int = 2,
    threads: Int = 1
) throws where Scheme.EvaluationKeyType: Sendable {
    var rng = ChaCha20Generator.systemSeeded()
    let entries = randomEntries(count: entryCount, size: entrySize, &rng)
    let parameters = try IndexPirParameters(
        entryCount: entryCount, entrySize: entrySize, batchSize: batchSize, degree: scheme.degree,
        plaintextModulus: scheme.plaintextModulusValue, dimensionCount: dimensionCount)
    #expect(parameters.dimensions.count == dimensionCount || parameters.plaintextCount == 1)
    let server = IndexPirServer(
        scheme: scheme, database: try IndexPirDatabase(entries: entries, parameters: parameters, scheme: scheme), threads: threads)
    let client = try IndexPirClient(scheme: scheme, parameters: parameters)
    let secretKey = scheme.generateSecretKey()
    let evaluationKey = try client.generateEvaluationKey(secretKey: secretKey)
    for _ in 0..<queries {
        let indices = (0..<batchSize).map { _ in Int(rng.nextWord()) % entryCount }
        let query = try client.generateQuery(indices: indices, secretKey: secretKey)
        #expect(query.ciphertexts.count == parameters.queryCiphertextCount)
        let response = try server.respond(to: query, evaluationKey: evaluationKey)
        #expect(response.ciphertexts.count == parameters.responseCiphertextCount)
        for ciphertext in response.ciphertexts {
            #expect(scheme.noiseBudget(ciphertext, secretKey: secretKey) > 0)
        }
        let answers = try client.decrypt(response, indices: indices, secretKey: secretKey)
        #expect(answers == indices.map { entries[$0] }, "indices \(indices) with \(parameters)")
    }
}

@Suite("Index PIR")
struct IndexPirTests {
    static let fake = FakeScheme(degree: 64, plaintextModulus: 17)

    @Test(arguments: [1, 2])
    func fakeSchemeSmallEntries(dimensions: Int) throws {
        try checkIndexPir(Self.fake, entryCount: 100, entrySize: 5, batchSize: 1, dimensionCount: dimensions)
        try checkIndexPir(Self.fake, entryCount: 300, entrySize: 3, batchSize: 2, dimensionCount: dimensions)
    }

    @Test func fakeSchemeEntriesSpanningPlaintexts() throws {
        try checkIndexPir(Self.fake, entryCount: 20, entrySize: 70, batchSize: 2, dimensionCount: 2)
    }

    @Test func fakeSchemeManyQueryCiphertexts() throws {
        // 8 indices × (d1 + d2) selectors exceed one 64-coefficient query ciphertext.
        try checkIndexPir(Self.fake, entryCount: 2000, entrySize: 4, batchSize: 8, dimensionCount: 2, queries: 1)
    }

    @Test(arguments: [1, 2])
    func bfv(dimensions: Int) throws {
        let scheme = try BFVContext(parameters: .insecureN256T17)
        try checkIndexPir(scheme, entryCount: 600, entrySize: 9, batchSize: 2, dimensionCount: dimensions, queries: 1)
    }

    @Test func bfvOnTwoThreads() throws {
        let scheme = try BFVContext(parameters: .insecureN256T17)
        try checkIndexPir(scheme, entryCount: 900, entrySize: 9, batchSize: 2, dimensionCount: 2, queries: 1, threads: 2)
        try checkIndexPir(Self.fake, entryCount: 300, entrySize: 3, batchSize: 3, dimensionCount: 2, threads: 2)
    }

    @Test func bfvLargeEntries() throws {
        let scheme = try BFVContext(parameters: .insecureN256T17)
        try checkIndexPir(scheme, entryCount: 10, entrySize: 300, batchSize: 1, dimensionCount: 2, queries: 1)
    }

    /// A second dimension widened within limits keeps the expansion under a power of two: one
    /// level and one Galois key fewer; where no such shape exists the ratio's choice stays.
    @Test func dimensionsFitTheExpansion() throws {
        let million = try IndexPirParameters(entryCount: 69_445, entrySize: 89, batchSize: 2, degree: 4096, plaintextModulus: 17)
        #expect(million.plaintextCount == 3020)
        #expect(million.dimensions == [95, 32])
        #expect(million.galoisElements.count == 8)
        let small = try IndexPirParameters(entryCount: 6945, entrySize: 89, batchSize: 2, degree: 4096, plaintextModulus: 17)
        #expect(small.dimensions == [34, 9])
    }

    /// Apple's `CoefficientPackingTests` vectors: most significant bit first.
    @Test func packingMatchesApple() {
        var four: [UInt64] = []
        CoefficientPacking(plaintextModulus: 17).pack([3, 24, 95, 141, 179, 34, 113], into: &four)
        #expect(four == [0, 3, 1, 8, 5, 15, 8, 13, 11, 3, 2, 2, 7, 1])
        let five = CoefficientPacking(plaintextModulus: 37)  // ⌊log2 37⌋ = 5
        #expect(five.unpack([0, 3, 1, 8, 5, 15, 8, 13, 11, 3, 2, 2, 7, 1], byteCount: 9) == [0, 194, 130, 189, 13, 88, 196, 35, 132])
        var bytes: [UInt64] = []
        CoefficientPacking(plaintextModulus: 257).pack((0...255).map { UInt8($0) }, into: &bytes)
        #expect(bytes == (0...255).map { UInt64($0) })
    }

    /// Entries that straddle coefficients (6-bit coefficients, 5-byte entries) come back intact.
    @Test func fakeSchemeEntriesStraddlingCoefficients() throws {
        try checkIndexPir(FakeScheme(degree: 64, plaintextModulus: 97), entryCount: 41, entrySize: 5, batchSize: 2, dimensionCount: 2, queries: 6)
    }

    @Test func packingRoundTripsForEveryWidth() {
        var rng = ChaCha20Generator.systemSeeded()
        for t: UInt32 in [2, 3, 17, 257, 65537, 1 << 20 | 1] {
            let packing = CoefficientPacking(plaintextModulus: t)
            for size in [0, 1, 7, 33] {
                let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.nextWord()) }
                var coefficients: [UInt64] = []
                packing.pack(bytes, into: &coefficients)
                #expect(coefficients.count == packing.coefficientCount(forBytes: size))
                #expect(coefficients.allSatisfy { $0 < UInt64(t) })
                #expect(packing.unpack(coefficients, byteCount: size) == bytes)
            }
        }
    }

    @Test func rejectsBadInput() throws {
        let parameters = try IndexPirParameters(entryCount: 10, entrySize: 4, batchSize: 1, degree: 64, plaintextModulus: 17)
        let client = try IndexPirClient(scheme: Self.fake, parameters: parameters)
        #expect(throws: PirError.indexOutOfRange(index: 10, entryCount: 10)) { try client.generateQuery(indices: [10], secretKey: ()) }
        #expect(throws: PirError.self) { try client.generateQuery(indices: [1, 2], secretKey: ()) }
        #expect(throws: PirError.entryTooLarge(index: 1, size: 5, maximum: 4)) {
            try IndexPirDatabase(entries: [[1], [1, 2, 3, 4, 5]], parameters: parameters, scheme: Self.fake)
        }
        let server = IndexPirServer(scheme: Self.fake, database: try IndexPirDatabase(entries: [[1]], parameters: parameters, scheme: Self.fake))
        #expect(throws: PirError.wrongQueryShape(got: 0, expected: 1)) {
            try server.respond(to: IndexPirQuery(ciphertexts: []), evaluationKey: [])
        }
        // 100 entries of 8 coefficients need 13 plaintexts; a 3×4 grid holds 12.
        #expect(throws: PirError.invalidParameters("dimensions [3, 4] hold 12 plaintexts, 13 needed")) {
            try IndexPirParameters(entryCount: 100, entrySize: 4, dimensions: [3, 4], batchSize: 1, degree: 64, plaintextModulus: 17)
        }
    }
}
