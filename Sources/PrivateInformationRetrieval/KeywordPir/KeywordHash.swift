import Crypto

/// What a keyword becomes, as in Apple's swift-homomorphic-encryption (`HashKeyword`, and the
/// sharding function its `EncodingPipeline` article specifies): the keyword hash is the first 8
/// bytes of SHA-256(keyword) read as a little-endian integer; it names the keyword inside a
/// bucket, picks the shard (hash mod shard count), and seeds the cuckoo bucket candidates.
public struct KeywordHash: Sendable, Hashable {
    public let keywordHash: UInt64

    public init<Bytes: Sequence>(keyword: Bytes) where Bytes.Element == UInt8 {
        let digest = SHA256.hash(data: Array(keyword))
        keywordHash = digest.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
    }

    public init(keyword: String) { self.init(keyword: Array(keyword.utf8)) }

    /// A hash already computed.
    public init(keywordHash: UInt64) { self.keywordHash = keywordHash }

    /// The shard this keyword lives in under Apple's default (`.sha256`) sharding function.
    public func shard(of count: Int) -> Int { ShardingFunction.sha256.shard(of: self, count: count) }

    /// The bucket candidate for `counter`: the first 8 bytes (little-endian) of
    /// SHA-256(keyword hash as 8 big-endian bytes ‖ counter byte), modulo the bucket count.
    static func bucketCandidate(_ hash: UInt64, counter: UInt8, bucketCount: Int) -> Int {
        var hasher = SHA256()
        withUnsafeBytes(of: hash.bigEndian) { hasher.update(bufferPointer: $0) }
        hasher.update(data: [counter])
        let value = hasher.finalize().withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        return Int(value % UInt64(bucketCount))
    }

    /// Retries (counter 1…) before accepting a candidate already taken by an earlier function.
    static let maximumRetries: UInt8 = 10

    /// The keyword's bucket in each of the `count` cuckoo tables of `bucketCount` buckets:
    /// candidate i starts at counter 0 and counts up (at most 10 times) while it equals an earlier
    /// candidate, so candidates differ whenever the table is large enough (Apple's
    /// `HashKeyword.hashIndices`).
    public func buckets(count: Int, bucketCount: Int) -> [Int] {
        var candidates: [Int] = []
        candidates.reserveCapacity(count)
        for _ in 0..<count {
            var counter: UInt8 = 0
            var index = Self.bucketCandidate(keywordHash, counter: counter, bucketCount: bucketCount)
            while candidates.contains(index), counter < Self.maximumRetries {
                counter += 1
                index = Self.bucketCandidate(keywordHash, counter: counter, bucketCount: bucketCount)
            }
            candidates.append(index)
        }
        return candidates
    }
}
