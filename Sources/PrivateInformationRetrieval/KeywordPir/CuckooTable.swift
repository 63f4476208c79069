/// Cuckoo hashing with one table per hash function (Pagh and Rodler, "Cuckoo Hashing"; bucketed
/// as in Dietzfelbinger and Weidling): a keyword lives in table i at its i-th candidate bucket
/// (``KeywordHash/buckets(count:bucketCount:)``); when every candidate is full a random occupant
/// is evicted and re-placed. This is the shape Apple's keyword PIR queries: batch entry i of a
/// query reads table i. Deterministic for a given input order.
struct CuckooTable {
    struct Slot {
        var hash: UInt64
        var value: [UInt8]
        /// The keyword's bucket in each table (computed once).
        var candidates: [Int]
    }

    let bucketCount: Int
    let capacity: Int
    let tableCount: Int
    /// tables[i][bucket]: the slots of one bucket.
    private(set) var tables: [[[Slot]]]
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// Evictions tried for one insertion before giving up.
    static let maximumEvictions = 500

    init(bucketCount: Int, capacity: Int, tableCount: Int) {
        self.bucketCount = bucketCount
        self.capacity = capacity
        self.tableCount = tableCount
        tables = Array(repeating: Array(repeating: [], count: bucketCount), count: tableCount)
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
            let target = (0..<tableCount).min { tables[$0][item.candidates[$0]].count < tables[$1][item.candidates[$1]].count }!
            if tables[target][item.candidates[target]].count < capacity {
                tables[target][item.candidates[target]].append(item)
                return true
            }
            let table = nextRandom() % tableCount
            let victim = nextRandom() % capacity
            swap(&item, &tables[table][item.candidates[table]][victim])
        }
        return false
    }

    /// Bucket `index` of table `table` in ``HashBucket`` layout.
    func serializedBucket(table: Int, _ index: Int) -> [UInt8] {
        HashBucket.serialize(tables[table][index].map { ($0.hash, $0.value) })
    }

    var count: Int { tables.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } } }
}
