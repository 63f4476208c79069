/// How keyword-PIR databases are laid out: keywords sharded by a hash, each shard a cuckoo
/// table of buckets with `bucketCapacity` slots of (64-bit keyword hash, value).
public struct KeywordPirParameters: Sendable, Hashable, Codable {
    /// 1 or 2 cuckoo hash functions; a query asks for every candidate bucket at once.
    public let hashFunctionCount: Int
    /// Slots per bucket.
    public let bucketCapacity: Int
    /// Bytes per value (shorter values are zero-padded; the URL filter stores 1 byte).
    public let valueSize: Int
    /// How many shards the keywords are split into.
    public let shardCount: Int
    /// The fill the cuckoo table aims for when sizing (buckets grow when insertion fails).
    public let targetLoadFactor: Double

    public init(
        hashFunctionCount: Int = 2, bucketCapacity: Int = 8, valueSize: Int = 1, shardCount: Int = 1,
        targetLoadFactor: Double = 0.9
    ) throws(PirError) {
        guard (1...2).contains(hashFunctionCount), bucketCapacity >= 1, valueSize >= 1, shardCount >= 1,
              targetLoadFactor > 0, targetLoadFactor <= 1
        else {
            throw .invalidParameters("hash functions \(hashFunctionCount) (1–2), capacity \(bucketCapacity), value size \(valueSize), shards \(shardCount), load \(targetLoadFactor)")
        }
        self.hashFunctionCount = hashFunctionCount
        self.bucketCapacity = bucketCapacity
        self.valueSize = valueSize
        self.shardCount = shardCount
        self.targetLoadFactor = targetLoadFactor
    }

    /// Bytes per slot: the keyword hash then the value.
    public var slotSize: Int { 8 + valueSize }
    /// Bytes per serialized bucket (one index-PIR entry).
    public var bucketSize: Int { bucketCapacity * slotSize }
}

/// What a client needs to know about one shard to query it.
public struct KeywordPirShardConfiguration: Sendable, Hashable, Codable {
    public let bucketCount: Int
    public let indexParameters: IndexPirParameters

    public init(bucketCount: Int, indexParameters: IndexPirParameters) {
        self.bucketCount = bucketCount
        self.indexParameters = indexParameters
    }
}
