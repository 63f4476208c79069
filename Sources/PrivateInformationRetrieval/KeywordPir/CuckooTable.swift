/// A bucketed cuckoo hash table: each keyword goes into one of its candidate buckets; when
/// all are full a random occupant is evicted and re-placed (Pagh and Rodler, "Cuckoo Hashing";
/// bucketed variant as in Dietzfelbinger and Weidling). Deterministic for a given input order.
struct CuckooTable {
    struct Slot {
        var hash: KeywordHash
        var value: [UInt8]
    }

    let bucketCount: Int
    let capacity: Int
    let hashFunctionCount: Int
    private(set) var buckets: [[Slot]]
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// Evictions tried for one insertion before giving up.
    static let maximumEvictions = 500

    init(bucketCount: Int, capacity: Int, hashFunctionCount: Int) {
        self.bucketCount = bucketCount
        self.capacity = capacity
        self.hashFunctionCount = hashFunctionCount
        buckets = Array(repeating: [], count: bucketCount)
    }

    private mutating func nextRandom() -> Int {
        // splitmix64: placement only needs to be varied, not secret.
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: (z ^ (z >> 31)) >> 1)
    }

    /// Inserts; false when no placement was found within the eviction budget (the table is
    /// then left with one item dropped: rebuild larger).
    mutating func insert(_ slot: Slot) -> Bool {
        var item = slot
        for _ in 0...CuckooTable.maximumEvictions {
            let candidates = (0..<hashFunctionCount).map { item.hash.bucket($0, of: bucketCount) }
            if let target = candidates.min(by: { buckets[$0].count < buckets[$1].count }), buckets[target].count < capacity {
                buckets[target].append(item)
                return true
            }
            let victimBucket = candidates[nextRandom() % candidates.count]
            let victimSlot = nextRandom() % capacity
            swap(&item, &buckets[victimBucket][victimSlot])
        }
        return false
    }

    /// Candidate buckets of a keyword.
    func candidates(of hash: KeywordHash) -> [Int] {
        (0..<hashFunctionCount).map { hash.bucket($0, of: bucketCount) }
    }

    /// The serialized bucket: `capacity` slots of (keyword hash LE, value), zeros when empty.
    func serializedBucket(_ index: Int, valueSize: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(capacity * (8 + valueSize))
        for slot in buckets[index] {
            for k in 0..<8 { out.append(UInt8(truncatingIfNeeded: slot.hash.keywordHash >> (8 * UInt64(k)))) }
            out += slot.value + [UInt8](repeating: 0, count: valueSize - slot.value.count)
        }
        return out
    }

    var count: Int { buckets.reduce(0) { $0 + $1.count } }
}
