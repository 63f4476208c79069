import HomomorphicEncryption
import Testing
@testable import PrivateInformationRetrieval

func checkKeywordPir<Scheme: HeScheme>(
    _ scheme: Scheme, keywordCount: Int, parameters: KeywordPirParameters, lookups: Int
) throws where Scheme.EvaluationKeyType: Sendable {
    let rows = (0..<keywordCount).map { KeywordValuePair(keyword: "site-\($0).example/path", value: [UInt8(1 + $0 % 250)]) }
    let database = try KeywordDatabase(rows: rows, parameters: parameters, scheme: scheme)
    let server = try KeywordPirServer(scheme: scheme, database: database)
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
        let items = (0..<20_000).map { (KeywordHash(keyword: "k\($0)").keywordHash, [UInt8(1)]) }
        let table = try KeywordDatabase<FakeScheme>.buildTable(items, parameters: parameters)
        #expect(table.count == items.count)
        let load = Double(items.count) / Double(table.bucketCount * 2 * 8)
        #expect(load > 0.8, "load \(load)")
        for (hash, _) in items.prefix(2000) {
            // In table i, only at the keyword's i-th candidate bucket.
            let candidates = KeywordHash(keywordHash: hash).buckets(count: 2, bucketCount: table.bucketCount)
            let found = (0..<2).filter { i in table.tables[i][candidates[i]].contains { $0.hash == hash } }
            #expect(found.count == 1)
        }
    }

    @Test(arguments: [1, 2])
    func fakeSchemeAcrossShards(hashFunctions: Int) throws {
        let parameters = try KeywordPirParameters(hashFunctionCount: hashFunctions, bucketCapacity: 4, valueSize: 1, shardCount: 3)
        try checkKeywordPir(FakeScheme(degree: 256, plaintextModulus: 17), keywordCount: 500, parameters: parameters, lookups: 20)
    }

    /// Apple's double-mod sharding: a keyword's shard follows another use case's (7 shards here)
    /// folded onto this one's 3; the database and the client must agree, or every answer is
    /// "absent".
    @Test func fakeSchemeDoubleModSharding() throws {
        let parameters = try KeywordPirParameters(
            hashFunctionCount: 2, bucketCapacity: 4, valueSize: 1, shardCount: 3, shardingFunction: .doubleMod(otherShardCount: 7))
        try checkKeywordPir(FakeScheme(degree: 256, plaintextModulus: 17), keywordCount: 500, parameters: parameters, lookups: 20)
        let hash = KeywordHash(keyword: "abc")
        #expect(parameters.shard(of: hash) == Int((UInt64(0xEACF_018F_BF16_78BA) % 7) % 3))
        #expect(throws: PirError.self) { try KeywordPirParameters(shardingFunction: .doubleMod(otherShardCount: 0)) }
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
        #expect(throws: PirError.self) { try KeywordPirParameters(hashFunctionCount: 9) }
        #expect(throws: PirError.self) { try KeywordPirParameters(bucketCapacity: 256) }
    }

    @Test func keywordHashIsSHA256Prefix() {
        // SHA-256("abc") = ba7816bf 8f01cfea …: the first 8 bytes, little-endian.
        let hash = KeywordHash(keyword: "abc")
        #expect(hash.keywordHash == 0xEACF_018F_BF16_78BA)
        let expected = Int(UInt64(0xEACF_018F_BF16_78BA) % 7)
        #expect(hash.shard(of: 7) == expected)
    }

    /// Apple's `HashBucketTests.hashIndices` vectors.
    @Test func bucketCandidatesMatchApple() {
        #expect(KeywordHash(keyword: [0, 1, 2, 3]).buckets(count: 3, bucketCount: 8) == [7, 3, 0])
        #expect(KeywordHash(keyword: [3, 2, 1, 0]).buckets(count: 5, bucketCount: 2048) == [1989, 1767, 1260, 242, 1122])
    }

    /// Apple's `HashBucketTests.bucketDeserialization` vector: three slots, found by the hash
    /// of their keyword; and our serialization writes exactly those bytes.
    @Test func hashBucketMatchesApple() throws {
        let raw: [UInt8] = [3, 24, 95, 141, 179, 34, 113, 254, 37, 5, 0, 87, 111, 114, 108, 100, 82, 117, 17, 222,
                            175, 220, 211, 74, 6, 0, 77, 97, 97, 105, 108, 109, 192, 21, 173, 109, 218, 248, 187, 80, 8,
                            0, 68, 97, 114, 107, 110, 101, 115, 115]
        let slots = try HashBucket.parse(raw + [0, 0, 0])  // entry padding is ignored
        #expect(slots.count == 3)
        #expect(slots.first { $0.hash == KeywordHash(keyword: "Hello").keywordHash }?.value == Array("World".utf8))
        #expect(slots.first { $0.hash == KeywordHash(keyword: "Goodbye").keywordHash }?.value == Array("Darkness".utf8))
        #expect(HashBucket.serialize(slots) == raw)
        #expect(throws: PirError.self) { try HashBucket.parse(Array(raw.prefix(30))) }
        #expect(throws: PirError.self) { try HashBucket.parse([]) }
    }

    /// Bucket parsing reads untrusted decrypted bytes: random and truncated buckets give slots
    /// or a `malformedBucket` error, never a crash.
    @Test func randomBucketsParseOrAreRefused() {
        var rng = ChaCha20Generator(seed: [UInt8](repeating: 7, count: 32))
        for trial in 0..<5000 {
            let count = Int(rng.nextWord() % 120)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.nextWord()) }
            if trial % 2 == 0, !bytes.isEmpty { bytes[0] = UInt8(rng.nextWord() % 4) }
            do {
                let slots = try HashBucket.parse(bytes)
                #expect(HashBucket.size(valueSizes: slots.map(\.value.count)) <= bytes.count)
            } catch {
                guard case .malformedBucket = error else { Issue.record("unexpected \(error)"); continue }
            }
        }
    }
}

@Suite("README example")
struct ReadmeKeywordExample {
    /// The README's library example, verbatim apart from the expectations.
    @Test func readmeExampleRuns() throws {
        let context = try BFVContext(parameters: .n4096LogQ27_28_28LogT5)     // HomomorphicEncryption
        let database = try KeywordDatabase(rows: [KeywordValuePair(keyword: "ads.example", value: [1])],
                                           parameters: try KeywordPirParameters(), scheme: context)
        let server = try KeywordPirServer(scheme: context, database: database)   // PrivateInformationRetrieval
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
