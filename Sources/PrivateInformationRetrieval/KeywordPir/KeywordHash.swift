import Crypto

/// What a keyword becomes: SHA-256 of its bytes, split into a 64-bit keyword hash (stored in
/// the database to recognize the entry; 0 is reserved for empty slots and maps to 1), a shard
/// selector, and the two cuckoo bucket hashes.
public struct KeywordHash: Sendable, Hashable {
    public let keywordHash: UInt64
    public let shardSelector: UInt64
    public let bucketHashes: (UInt64, UInt64)

    public init<Bytes: Sequence>(keyword: Bytes) where Bytes.Element == UInt8 {
        let digest = Array(SHA256.hash(data: Array(keyword)))
        func word(_ offset: Int) -> UInt64 {
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(digest[offset + $1]) << (8 * UInt64($1)) }
        }
        let hash = word(0)
        keywordHash = hash == 0 ? 1 : hash
        shardSelector = word(8)
        bucketHashes = (word(16), word(24))
    }

    public init(keyword: String) { self.init(keyword: Array(keyword.utf8)) }

    /// The shard this keyword lives in.
    public func shard(of count: Int) -> Int { Int(shardSelector % UInt64(count)) }

    /// The candidate bucket for hash function `i` (0 or 1) in a table of `bucketCount`.
    public func bucket(_ i: Int, of bucketCount: Int) -> Int {
        Int((i == 0 ? bucketHashes.0 : bucketHashes.1) % UInt64(bucketCount))
    }

    public static func == (a: KeywordHash, b: KeywordHash) -> Bool {
        a.keywordHash == b.keywordHash && a.shardSelector == b.shardSelector
            && a.bucketHashes.0 == b.bucketHashes.0 && a.bucketHashes.1 == b.bucketHashes.1
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(keywordHash) }
}
