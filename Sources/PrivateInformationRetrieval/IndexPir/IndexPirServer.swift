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

/// Answers index-PIR queries over one database. Immutable and `Sendable`: one instance
/// serves concurrent queries.
public struct IndexPirServer<Scheme: HeScheme>: Sendable where Scheme.EvaluationKeyType: Sendable {
    public let scheme: Scheme
    public let database: IndexPirDatabase<Scheme>
    /// Threads one query may use (expansion nodes, columns and batch entries run in parallel).
    public let threads: Int
    public var parameters: IndexPirParameters { database.parameters }

    public init(scheme: Scheme, database: IndexPirDatabase<Scheme>, threads: Int = 1) {
        self.scheme = scheme
        self.database = database
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
        let scheme = self.scheme, chunks = database.chunks, threads = self.threads
        let d1 = parameters.dimensions[0]
        let d2 = parameters.dimensions.count == 2 ? parameters.dimensions[1] : 1
        let expanded = selectors
        // One task per (batch entry, chunk, column): the first-dimension dot products.
        let perIndex = chunks.count * d2
        let columns = try ParallelWork.map(count: parameters.batchSize * perIndex, threads: threads) {
            (task) throws(PirError) -> Scheme.CiphertextType in
            let b = task / perIndex, chunk = chunks[(task % perIndex) / d2], column = task % d2
            let base = b * parameters.selectorsPerIndex
            let cells = (0..<d1).map { chunk[$0 * d2 + column] }
            return try he { () throws(HomomorphicEncryptionError) in
                try scheme.dotProduct(cells, Array(expanded[base..<(base + d1)]))
            }
        }
        // One task per (batch entry, chunk): the second dimension and the final modulus switch.
        let responses = try ParallelWork.map(count: parameters.batchSize * chunks.count, threads: threads) {
            (task) throws(PirError) -> Scheme.CiphertextType in
            let b = task / chunks.count
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
