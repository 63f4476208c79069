/// How keyword-PIR databases are laid out: keywords sharded by their hash, each shard one
/// cuckoo table per hash function, of buckets holding up to `bucketCapacity` slots of (64-bit
/// keyword hash, value) in ``HashBucket`` layout. A client needs only `hashFunctionCount` and
/// `shardCount`; capacity, value size and load factor shape the server's build.
public struct KeywordPirParameters: Sendable, Hashable, Codable {
    /// Cuckoo hash functions (= tables); a query asks for every candidate bucket at once.
    public let hashFunctionCount: Int
    /// Slots per bucket (at most 255, the bucket's count byte).
    public let bucketCapacity: Int
    /// Largest value in bytes (the URL filter stores 1 byte).
    public let valueSize: Int
    /// How many shards the keywords are split into.
    public let shardCount: Int
    /// The fill the cuckoo table aims for when sizing (buckets grow when insertion fails).
    public let targetLoadFactor: Double
    /// How a keyword picks its shard.
    public let shardingFunction: ShardingFunction

    public init(
        hashFunctionCount: Int = 2, bucketCapacity: Int = 8, valueSize: Int = 1, shardCount: Int = 1,
        targetLoadFactor: Double = 0.9, shardingFunction: ShardingFunction = .sha256
    ) throws(PirError) {
        guard (1...8).contains(hashFunctionCount), (1...HashBucket.maximumSlots).contains(bucketCapacity),
              (1...HashBucket.maximumValueSize).contains(valueSize), shardCount >= 1,
              targetLoadFactor > 0, targetLoadFactor <= 1
        else {
            throw .invalidParameters("hash functions \(hashFunctionCount) (1–8), capacity \(bucketCapacity) (1–255), value size \(valueSize) (1–65535), shards \(shardCount), load \(targetLoadFactor)")
        }
        self.hashFunctionCount = hashFunctionCount
        self.bucketCapacity = bucketCapacity
        self.valueSize = valueSize
        self.shardCount = shardCount
        self.targetLoadFactor = targetLoadFactor
        if case .doubleMod(let other) = shardingFunction, other < 1 {
            throw .invalidParameters("double-mod sharding over \(other) other shards (at least 1)")
        }
        self.shardingFunction = shardingFunction
    }

    /// The shard `hash` lives in.
    public func shard(of hash: KeywordHash) -> Int { shardingFunction.shard(of: hash, count: shardCount) }
}

/// What a client needs to know about one shard to query it.
public struct KeywordPirShardConfiguration: Sendable, Hashable, Codable {
    /// Buckets per cuckoo table (the index-PIR entry count).
    public let bucketCount: Int
    public let indexParameters: IndexPirParameters

    public init(bucketCount: Int, indexParameters: IndexPirParameters) {
        self.bucketCount = bucketCount
        self.indexParameters = indexParameters
    }
}
