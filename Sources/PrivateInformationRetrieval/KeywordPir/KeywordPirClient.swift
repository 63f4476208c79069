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
        let shard = hash.shard(of: parameters.shardCount)
        let configuration = shards[shard]
        let buckets = (0..<parameters.hashFunctionCount).map { hash.bucket($0, of: configuration.bucketCount) }
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
        let slotSize = parameters.slotSize
        for bucket in buckets {
            var offset = 0
            while offset + slotSize <= bucket.count {
                let stored = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bucket[offset + $1]) << (8 * UInt64($1)) }
                if stored == query.hash.keywordHash {
                    return Array(bucket[(offset + 8)..<(offset + slotSize)])
                }
                offset += slotSize
            }
        }
        return nil
    }
}

/// Answers keyword queries: each goes to its shard's index-PIR server.
public struct KeywordPirServer<Scheme: HeScheme>: Sendable where Scheme.EvaluationKeyType: Sendable {
    public let shards: [IndexPirServer<Scheme>]

    public init(scheme: Scheme, database: KeywordDatabase<Scheme>, threads: Int = 1) {
        shards = database.shards.map { IndexPirServer(scheme: scheme, database: $0, threads: threads) }
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
