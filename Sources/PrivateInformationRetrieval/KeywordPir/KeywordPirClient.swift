import HomomorphicEncryption

/// A keyword query in flight: which shard to send it to and what it asked for.
public struct KeywordPirQuery<Scheme: HeScheme>: Sendable {
    public let shard: Int
    public let query: IndexPirQuery<Scheme>
    let hash: KeywordHash
    let buckets: [Int]
}

/// Builds keyword queries and reads the answers.
public struct KeywordPirClient<Scheme: HeScheme>: Sendable {
    public let scheme: Scheme
    public let parameters: KeywordPirParameters
    public let shards: [KeywordPirShardConfiguration]

    public init(scheme: Scheme, parameters: KeywordPirParameters, shards: [KeywordPirShardConfiguration]) throws(PirError) {
        guard shards.count == parameters.shardCount else {
            throw .invalidParameters("\(shards.count) shard configurations for \(parameters.shardCount) shards")
        }
        self.scheme = scheme
        self.parameters = parameters
        self.shards = shards
    }

    /// The evaluation key for every shard (shards share N, t and, by construction, Galois
    /// elements up to the largest shard's expansion).
    public func generateEvaluationKey(secretKey: Scheme.SecretKeyType) throws(PirError) -> Scheme.EvaluationKeyType {
        let elements = Set(shards.flatMap(\.indexParameters.galoisElements)).sorted()
        let relinearization = shards.contains { $0.indexParameters.needsRelinearization }
        return try he { () throws(HomomorphicEncryptionError) in
            try scheme.generateEvaluationKey(galoisElements: elements, relinearization: relinearization, secretKey: secretKey)
        }
    }

    public func generateQuery(keyword: [UInt8], secretKey: Scheme.SecretKeyType) throws(PirError) -> KeywordPirQuery<Scheme> {
        let hash = KeywordHash(keyword: keyword)
        let shard = parameters.shard(of: hash)
        let configuration = shards[shard]
        let buckets = hash.buckets(count: parameters.hashFunctionCount, bucketCount: configuration.bucketCount)
        let client = try IndexPirClient(scheme: scheme, parameters: configuration.indexParameters)
        let query = try client.generateQuery(indices: buckets, secretKey: secretKey)
        return KeywordPirQuery(shard: shard, query: query, hash: hash, buckets: buckets)
    }

    /// The keyword's value, or nil when the keyword is not in the database.
    public func decrypt(
        _ response: IndexPirResponse<Scheme>, for query: KeywordPirQuery<Scheme>, secretKey: Scheme.SecretKeyType
    ) throws(PirError) -> [UInt8]? {
        let client = try IndexPirClient(scheme: scheme, parameters: shards[query.shard].indexParameters)
        let buckets = try client.decrypt(response, indices: query.buckets, secretKey: secretKey)
        for bucket in buckets {
            for slot in try HashBucket.parse(bucket) where slot.hash == query.hash.keywordHash {
                return slot.value
            }
        }
        return nil
    }
}

/// Answers keyword queries: each goes to its shard's index-PIR server, whose batch entry i
/// reads cuckoo table i.
public struct KeywordPirServer<Scheme: HeScheme>: Sendable where Scheme.EvaluationKeyType: Sendable {
    public let shards: [IndexPirServer<Scheme>]

    public init(scheme: Scheme, database: KeywordDatabase<Scheme>, threads: Int = 1) throws(PirError) {
        shards = try database.shards.map { (tables) throws(PirError) in try IndexPirServer(scheme: scheme, databases: tables, threads: threads) }
    }

    public func respond(
        to query: IndexPirQuery<Scheme>, shard: Int, evaluationKey: Scheme.EvaluationKeyType
    ) throws(PirError) -> IndexPirResponse<Scheme> {
        guard shards.indices.contains(shard) else {
            throw .invalidParameters("shard \(shard) does not exist (there are \(shards.count))")
        }
        return try shards[shard].respond(to: query, evaluationKey: evaluationKey)
    }
}
