/// How a keyword picks its shard, as Apple's `PIRShardingFunction` message names the choices
/// (swift-homomorphic-encryption-protobuf, `pir/v1/pir.proto`). Both start from the keyword hash,
/// the first 8 bytes of SHA-256(keyword) read little-endian.
public enum ShardingFunction: Sendable, Hashable, Codable {
    /// `hash % shardCount`: the default, and what NetExt's databases use.
    case sha256
    /// `(hash % otherShardCount) % shardCount`: a use case sharded to follow another one's
    /// shards (Apple uses it when two use cases must agree on where a keyword lives).
    case doubleMod(otherShardCount: Int)

    /// The shard of `hash` among `count` shards.
    public func shard(of hash: KeywordHash, count: Int) -> Int {
        switch self {
        case .sha256:
            return Int(hash.keywordHash % UInt64(count))
        case .doubleMod(let other):
            return Int((hash.keywordHash % UInt64(other)) % UInt64(count))
        }
    }
}
