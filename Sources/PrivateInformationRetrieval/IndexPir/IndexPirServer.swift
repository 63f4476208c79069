import HomomorphicEncryption

/// A query: the encrypted selector coefficients for every requested index.
public struct IndexPirQuery<Scheme: HeScheme>: Sendable {
    public var ciphertexts: [Scheme.CiphertextType]
    public init(ciphertexts: [Scheme.CiphertextType]) { self.ciphertexts = ciphertexts }
}

/// A response: for each requested index and each chunk, one ciphertext at the lowest level.
public struct IndexPirResponse<Scheme: HeScheme>: Sendable {
    public var ciphertexts: [Scheme.CiphertextType]
    public init(ciphertexts: [Scheme.CiphertextType]) { self.ciphertexts = ciphertexts }
}

/// Answers index-PIR queries over one database, or over one database per batch entry (keyword
/// PIR's cuckoo tables: batch entry b is looked up in table b, as in Apple's
/// `KeywordPirServer`). Immutable and `Sendable`: one instance serves concurrent queries.
public struct IndexPirServer<Scheme: HeScheme>: Sendable where Scheme.EvaluationKeyType: Sendable {
    public let scheme: Scheme
    /// One database, or `batchSize` databases with the same parameters.
    public let databases: [IndexPirDatabase<Scheme>]
    /// Threads one query may use (expansion nodes, columns and batch entries run in parallel).
    public let threads: Int
    public var parameters: IndexPirParameters { databases[0].parameters }

    /// A server over one database that every batch entry reads.
    public init(scheme: Scheme, database: IndexPirDatabase<Scheme>, threads: Int = 1) {
        self.scheme = scheme
        self.databases = [database]
        self.threads = max(1, threads)
    }

    /// A server over one database per batch entry (or one shared by all); every database must
    /// have the same parameters.
    public init(scheme: Scheme, databases: [IndexPirDatabase<Scheme>], threads: Int = 1) throws(PirError) {
        guard let first = databases.first,
              databases.count == 1 || databases.count == first.parameters.batchSize,
              databases.allSatisfy({ $0.parameters == first.parameters })
        else {
            throw .invalidParameters("\(databases.count) databases for a batch of \(databases.first?.parameters.batchSize ?? 0): one, or one per batch entry with equal parameters")
        }
        self.scheme = scheme
        self.databases = databases
        self.threads = max(1, threads)
    }

    /// Expands the query, selects along each dimension, and switches each result down to one
    /// prime (the smallest response).
    public func respond(
        to query: IndexPirQuery<Scheme>, evaluationKey: Scheme.EvaluationKeyType
    ) throws(PirError) -> IndexPirResponse<Scheme> {
        let parameters = self.parameters
        guard query.ciphertexts.count == parameters.queryCiphertextCount else {
            throw .wrongQueryShape(got: query.ciphertexts.count, expected: parameters.queryCiphertextCount)
        }
        var selectors: [Scheme.CiphertextType] = []
        for (k, ciphertext) in query.ciphertexts.enumerated() {
            selectors += try QueryExpansion.expand(
                ciphertext, outputCount: parameters.usedCoefficients(inQuery: k),
                levels: parameters.expansionLevels(inQuery: k), key: evaluationKey, scheme: scheme, threads: threads)
        }
        let scheme = self.scheme, tables = databases.map(\.chunks), threads = self.threads
        let chunkCount = tables[0].count
        let d1 = parameters.dimensions[0]
        let d2 = parameters.dimensions.count == 2 ? parameters.dimensions[1] : 1
        let expanded = selectors
        // One task per (batch entry, chunk, column): the first-dimension dot products.
        let perIndex = chunkCount * d2
        let columns = try ParallelWork.map(count: parameters.batchSize * perIndex, threads: threads) {
            (task) throws(PirError) -> Scheme.CiphertextType in
            let b = task / perIndex, column = task % d2
            let chunk = tables[tables.count == 1 ? 0 : b][(task % perIndex) / d2]
            let base = b * parameters.selectorsPerIndex
            let cells = (0..<d1).map { chunk[$0 * d2 + column] }
            return try he { () throws(HomomorphicEncryptionError) in
                try scheme.dotProduct(cells, Array(expanded[base..<(base + d1)]))
            }
        }
        // One task per (batch entry, chunk): the second dimension and the final modulus switch.
        let responses = try ParallelWork.map(count: parameters.batchSize * chunkCount, threads: threads) {
            (task) throws(PirError) -> Scheme.CiphertextType in
            let b = task / chunkCount
            let first = task * d2
            var result = columns[first]
            if parameters.dimensions.count == 2 {
                let base = b * parameters.selectorsPerIndex + d1
                result = try he { () throws(HomomorphicEncryptionError) in
                    try scheme.dotProduct(Array(columns[first..<(first + d2)]), Array(expanded[base..<(base + d2)]), key: evaluationKey)
                }
            }
            return try he { () throws(HomomorphicEncryptionError) in try scheme.modSwitchDown(result, toLevel: 1) }
        }
        return IndexPirResponse(ciphertexts: responses)
    }
}
