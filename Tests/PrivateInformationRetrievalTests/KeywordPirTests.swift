import HomomorphicEncryption
import Testing
@testable import PrivateInformationRetrieval

func checkKeywordPir<Scheme: HeScheme>(
    _ scheme: Scheme, keywordCount: Int, parameters: KeywordPirParameters, lookups: Int
) throws where Scheme.EvaluationKeyType: Sendable {
    let rows = (0..<keywordCount).map { KeywordValuePair(keyword: "site-\($0).example/path", value: [UInt8(1 + $0 % 250)]) }
    let database = try KeywordDatabase(rows: rows, parameters: parameters, scheme: scheme)
    let server = KeywordPirServer(scheme: scheme, database: database)
    let client = try KeywordPirClient(scheme: scheme, parameters: parameters, shards: database.configurations)
    let secretKey = scheme.generateSecretKey()
    let evaluationKey = try client.generateEvaluationKey(secretKey: secretKey)
    var rng = ChaCha20Generator.systemSeeded()
    for i in 0..<lookups {
        let present = Int(rng.nextWord()) % keywordCount
        let keyword = i.isMultiple(of: 2) ? "site-\(present).example/path" : "absent-\(i).example"
        let query = try client.generateQuery(keyword: Array(keyword.utf8), secretKey: secretKey)
        let response = try server.respond(to: query.query, shard: query.shard, evaluationKey: evaluationKey)
        let value = try client.decrypt(response, for: query, secretKey: secretKey)
        #expect(value == (i.isMultiple(of: 2) ? [UInt8(1 + present % 250)] : nil), "\(keyword)")
    }
}

@Suite("Keyword PIR")
struct KeywordPirTests {
    @Test func cuckooTablePlacesEveryKeywordAtHighLoad() throws {
        let parameters = try KeywordPirParameters(hashFunctionCount: 2, bucketCapacity: 8, valueSize: 1, targetLoadFactor: 0.9)
        let items = (0..<20_000).map { (KeywordHash(keyword: "k\($0)"), [UInt8(1)]) }
        let table = try KeywordDatabase<FakeScheme>.buildTable(items, parameters: parameters)
        #expect(table.count == items.count)
        let load = Double(items.count) / Double(table.bucketCount * 8)
        #expect(load > 0.8, "load \(load)")
        for (hash, _) in items.prefix(2000) {
            #expect(table.candidates(of: hash).contains { b in table.buckets[b].contains { $0.hash.keywordHash == hash.keywordHash } })
        }
    }

    @Test(arguments: [1, 2])
    func fakeSchemeAcrossShards(hashFunctions: Int) throws {
        let parameters = try KeywordPirParameters(hashFunctionCount: hashFunctions, bucketCapacity: 4, valueSize: 1, shardCount: 3)
        try checkKeywordPir(FakeScheme(degree: 256, plaintextModulus: 17), keywordCount: 500, parameters: parameters, lookups: 20)
    }

    @Test func bfvAcrossShards() throws {
        let parameters = try KeywordPirParameters(hashFunctionCount: 2, bucketCapacity: 4, valueSize: 1, shardCount: 2)
        try checkKeywordPir(try BFVContext(parameters: .insecureN256T17), keywordCount: 300, parameters: parameters, lookups: 4)
    }

    @Test func rejectsDuplicatesAndOversizedValues() throws {
        let parameters = try KeywordPirParameters(valueSize: 1)
        let scheme = FakeScheme(degree: 64, plaintextModulus: 17)
        #expect(throws: PirError.duplicateKeyword("a")) {
            try KeywordDatabase(rows: [KeywordValuePair(keyword: "a", value: [1]), KeywordValuePair(keyword: "a", value: [2])], parameters: parameters, scheme: scheme)
        }
        #expect(throws: PirError.valueTooLarge(keyword: "b", size: 2, maximum: 1)) {
            try KeywordDatabase(rows: [KeywordValuePair(keyword: "b", value: [1, 2])], parameters: parameters, scheme: scheme)
        }
        #expect(throws: PirError.self) { try KeywordPirParameters(hashFunctionCount: 3) }
    }

    @Test func keywordHashIsSHA256Split() {
        // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad
        let hash = KeywordHash(keyword: "abc")
        #expect(hash.keywordHash == 0xEACF_018F_BF16_78BA)
        #expect(hash.shardSelector == 0x2322_AE5D_DE40_4141)
        #expect(hash.bucketHashes.0 == 0x9C7A_1796_A361_03B0)
        #expect(hash.bucketHashes.1 == 0xAD15_00F2_61FF_10B4)
    }
}

@Suite("README example")
struct ReadmeKeywordExample {
    /// The README's library example, verbatim apart from the expectations.
    @Test func readmeExampleRuns() throws {
        let context = try BFVContext(parameters: .n4096LogQ27_28_28LogT5)     // HomomorphicEncryption
        let database = try KeywordDatabase(rows: [KeywordValuePair(keyword: "ads.example", value: [1])],
                                           parameters: try KeywordPirParameters(), scheme: context)
        let server = KeywordPirServer(scheme: context, database: database)   // PrivateInformationRetrieval
        let client = try KeywordPirClient(scheme: context, parameters: database.parameters, shards: database.configurations)
        let secretKey = context.generateSecretKey()
        let query = try client.generateQuery(keyword: Array("ads.example".utf8), secretKey: secretKey)
        let response = try server.respond(to: query.query, shard: query.shard,
                                          evaluationKey: try client.generateEvaluationKey(secretKey: secretKey))
        #expect(try client.decrypt(response, for: query, secretKey: secretKey) == [1])
        let other = try client.generateQuery(keyword: Array("news.example".utf8), secretKey: secretKey)
        let answer = try server.respond(to: other.query, shard: other.shard, evaluationKey: try client.generateEvaluationKey(secretKey: secretKey))
        #expect(try client.decrypt(answer, for: other, secretKey: secretKey) == nil)
    }
}
