import BloomFilter
import NetExtCore
import Synchronization

/// The system DNS settings' answers (``DNSAnswerCache``) in shards, each behind a lock of its
/// own: the stub's receiving threads and the encrypted servers' event loops look answers up and
/// keep them at the same time without queueing on one lock (which, with a cold cache, held
/// about 3 % of netextd's time in waits). A name's shard follows from its bytes (FNV-1a), so a
/// name is always kept and found in the same one; each holds an equal part of the capacity.
final class ShardedAnswerCache: Sendable {
    static let shardCount = 8
    private let shards: [Shard]

    private final class Shard: Sendable {
        let cache: Mutex<DNSAnswerCache>
        init(capacity: Int) { cache = Mutex(DNSAnswerCache(capacity: capacity)) }
    }

    init(capacity: Int = 10_000) {
        shards = (0..<Self.shardCount).map { _ in Shard(capacity: max(1, capacity / Self.shardCount)) }
    }

    /// The kept answer to `query` (already parsed), made the asker's (``DNSAnswerCache/answer(to:parsed:now:withoutOPT:)``).
    func answer(to query: [UInt8], parsed: DNSQuery, now: Double, withoutOPT: Bool = false) -> [UInt8]? {
        shard(of: parsed.name).cache.withLock { $0.answer(to: query, parsed: parsed, now: now, withoutOPT: withoutOPT) }
    }

    /// Keeps `answer` to the query `parsed` if it may be kept.
    func store(_ answer: [UInt8], for parsed: DNSQuery, now: Double) {
        let key = DNSAnswerCache.Key(parsed)
        shard(of: key.name).cache.withLock { $0.store(answer, key: key, now: now) }
    }

    private func shard(of name: String) -> Shard {
        shards[Int(FNV1a.hash32(name) % UInt32(Self.shardCount))]
    }
}
