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
public struct IndexPirServer<Scheme: HeScheme>: Sendable {
    public let scheme: Scheme
    public let database: IndexPirDatabase<Scheme>
    public var parameters: IndexPirParameters { database.parameters }

    public init(scheme: Scheme, database: IndexPirDatabase<Scheme>) {
        self.scheme = scheme
        self.database = database
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
                levels: parameters.expansionLevels(inQuery: k), key: evaluationKey, scheme: scheme)
        }
        let scheme = self.scheme
        let d1 = parameters.dimensions[0]
        var responses: [Scheme.CiphertextType] = []
        for b in 0..<parameters.batchSize {
            let base = b * parameters.selectorsPerIndex
            let first = Array(selectors[base..<(base + d1)])
            for chunk in database.chunks {
                var result: Scheme.CiphertextType
                if parameters.dimensions.count == 1 {
                    result = try he { () throws(HomomorphicEncryptionError) in try scheme.dotProduct(Array(chunk[0..<d1]), first) }
                } else {
                    let d2 = parameters.dimensions[1]
                    let second = Array(selectors[(base + d1)..<(base + d1 + d2)])
                    var columns: [Scheme.CiphertextType] = []
                    columns.reserveCapacity(d2)
                    for column in 0..<d2 {
                        let cells = (0..<d1).map { chunk[$0 * d2 + column] }
                        columns.append(try he { () throws(HomomorphicEncryptionError) in try scheme.dotProduct(cells, first) })
                    }
                    result = try he { () throws(HomomorphicEncryptionError) in
                        try scheme.dotProduct(columns, second, key: evaluationKey)
                    }
                }
                responses.append(try he { () throws(HomomorphicEncryptionError) in try scheme.modSwitchDown(result, toLevel: 1) })
            }
        }
        return IndexPirResponse(ciphertexts: responses)
    }
}
