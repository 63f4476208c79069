import HomomorphicEncryption

/// One keyword row: the keyword's bytes and its value.
public struct KeywordValuePair: Sendable, Hashable {
    public var keyword: [UInt8]
    public var value: [UInt8]

    public init(keyword: [UInt8], value: [UInt8]) {
        self.keyword = keyword
        self.value = value
    }

    public init(keyword: String, value: [UInt8]) { self.init(keyword: Array(keyword.utf8), value: value) }
}

/// A keyword database split into shards, each shard one cuckoo table per hash function, each
/// table encoded as an index-PIR database of serialized buckets.
public struct KeywordDatabase<Scheme: HeScheme>: Sendable {
    public let parameters: KeywordPirParameters
    /// shards[s][i]: table i of shard s.
    public let shards: [[IndexPirDatabase<Scheme>]]
    public let configurations: [KeywordPirShardConfiguration]

    /// Sorts rows into shards and cuckoo tables and encodes them. `progress(done, total)` is
    /// called as shards finish.
    public init(
        rows: [KeywordValuePair], parameters: KeywordPirParameters, scheme: Scheme,
        dimensionCount: Int = 2, dimensionRatio: Double = 4, progress: (Int, Int) -> Void = { _, _ in }
    ) throws(PirError) {
        self.parameters = parameters
        var seen = Set<[UInt8]>()
        var perShard = [[(UInt64, [UInt8])]](repeating: [], count: parameters.shardCount)
        for row in rows {
            guard seen.insert(row.keyword).inserted else { throw .duplicateKeyword(String(decoding: row.keyword, as: UTF8.self)) }
            guard row.value.count <= parameters.valueSize else {
                throw .valueTooLarge(keyword: String(decoding: row.keyword, as: UTF8.self), size: row.value.count, maximum: parameters.valueSize)
            }
            let hash = KeywordHash(keyword: row.keyword)
            perShard[parameters.shard(of: hash)].append((hash.keywordHash, row.value))
        }
        var shards: [[IndexPirDatabase<Scheme>]] = []
        var configurations: [KeywordPirShardConfiguration] = []
        for (index, items) in perShard.enumerated() {
            let table = try Self.buildTable(items, parameters: parameters)
            let buckets = (0..<table.tableCount).map { t in (0..<table.bucketCount).map { table.serializedBucket(table: t, $0) } }
            // Entries are as large as the largest bucket (Apple's default; empty buckets are one zero byte).
            let entrySize = buckets.joined().map(\.count).max() ?? 1
            let indexParameters = try IndexPirParameters(
                entryCount: table.bucketCount, entrySize: entrySize, batchSize: parameters.hashFunctionCount,
                degree: scheme.degree, plaintextModulus: scheme.plaintextModulusValue, dimensionCount: dimensionCount,
                dimensionRatio: dimensionRatio)
            shards.append(try buckets.map { (entries) throws(PirError) in
                try IndexPirDatabase(entries: entries, parameters: indexParameters, scheme: scheme)
            })
            configurations.append(KeywordPirShardConfiguration(bucketCount: table.bucketCount, indexParameters: indexParameters))
            progress(index + 1, perShard.count)
        }
        self.shards = shards
        self.configurations = configurations
    }

    /// Places every item, growing the tables by 10% until all fit (at most 20 tries).
    static func buildTable(_ items: [(UInt64, [UInt8])], parameters: KeywordPirParameters) throws(PirError) -> CuckooTable {
        let tables = parameters.hashFunctionCount
        let perTable = Double(items.count) / (Double(parameters.bucketCapacity * tables) * parameters.targetLoadFactor)
        var bucketCount = max(1, Int(perTable.rounded(.up)))
        for _ in 0..<20 {
            var table = CuckooTable(bucketCount: bucketCount, capacity: parameters.bucketCapacity, tableCount: tables)
            var placed = true
            for (hash, value) in items {
                let candidates = KeywordHash(keywordHash: hash).buckets(count: tables, bucketCount: bucketCount)
                if !table.insert(CuckooTable.Slot(hash: hash, value: value, candidates: candidates)) {
                    placed = false
                    break
                }
            }
            if placed { return table }
            bucketCount = bucketCount + max(1, bucketCount / 10)
        }
        throw .cuckooInsertionFailed(keywords: items.count, buckets: bucketCount * tables)
    }
}
