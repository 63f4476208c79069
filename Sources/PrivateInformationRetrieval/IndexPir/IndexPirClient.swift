import HomomorphicEncryption

/// Builds index-PIR queries and reads the answers, for one database's parameters.
public struct IndexPirClient<Scheme: HeScheme>: Sendable {
    public let scheme: Scheme
    public let parameters: IndexPirParameters

    public init(scheme: Scheme, parameters: IndexPirParameters) throws(PirError) {
        guard scheme.degree == parameters.degree, scheme.plaintextModulusValue == parameters.plaintextModulus else {
            throw .invalidParameters("client scheme N = \(scheme.degree), t = \(scheme.plaintextModulusValue) does not match the database's N = \(parameters.degree), t = \(parameters.plaintextModulus)")
        }
        self.scheme = scheme
        self.parameters = parameters
    }

    /// The evaluation key the server needs (Galois elements for expansion, relinearization
    /// for two dimensions).
    public func generateEvaluationKey(secretKey: Scheme.SecretKeyType) throws(PirError) -> Scheme.EvaluationKeyType {
        try he { () throws(HomomorphicEncryptionError) in
            try scheme.generateEvaluationKey(
                galoisElements: parameters.galoisElements, relinearization: parameters.needsRelinearization,
                secretKey: secretKey)
        }
    }

    /// A query for exactly `batchSize` indices (repeat one to ask for fewer).
    public func generateQuery(indices: [Int], secretKey: Scheme.SecretKeyType) throws(PirError) -> IndexPirQuery<Scheme> {
        guard indices.count == parameters.batchSize else {
            throw .invalidParameters("query for \(indices.count) indices; the batch size is \(parameters.batchSize)")
        }
        let n = parameters.degree
        var coefficients = [[UInt64]](repeating: [UInt64](repeating: 0, count: n), count: parameters.queryCiphertextCount)
        let t = UInt64(parameters.plaintextModulus)
        // The expansion multiplies by 2^ℓ; pre-scale by its inverse mod t.
        let scale = (0..<parameters.queryCiphertextCount).map { k -> UInt64 in
            var inverse: UInt64 = 1
            let half = (t + 1) / 2  // 2^−1 mod t for odd t
            for _ in 0..<parameters.expansionLevels(inQuery: k) { inverse = inverse * half % t }
            return inverse
        }
        for (b, index) in indices.enumerated() {
            guard index >= 0, index < parameters.entryCount else {
                throw .indexOutOfRange(index: index, entryCount: parameters.entryCount)
            }
            let (row, column) = parameters.coordinates(ofPlaintext: index / parameters.entriesPerPlaintext)
            var positions = [b * parameters.selectorsPerIndex + row]
            if parameters.dimensions.count == 2 {
                positions.append(b * parameters.selectorsPerIndex + parameters.dimensions[0] + column)
            }
            for position in positions { coefficients[position / n][position % n] = scale[position / n] }
        }
        var ciphertexts: [Scheme.CiphertextType] = []
        for values in coefficients {
            ciphertexts.append(try he { () throws(HomomorphicEncryptionError) in try scheme.encrypt(coefficients: values, secretKey: secretKey) })
        }
        return IndexPirQuery(ciphertexts: ciphertexts)
    }

    /// The entries for `indices` (the same list the query was built from), each `entrySize` bytes.
    public func decrypt(
        _ response: IndexPirResponse<Scheme>, indices: [Int], secretKey: Scheme.SecretKeyType
    ) throws(PirError) -> [[UInt8]] {
        guard response.ciphertexts.count == parameters.responseCiphertextCount else {
            throw .wrongResponseShape(got: response.ciphertexts.count, expected: parameters.responseCiphertextCount)
        }
        let packing = parameters.packing
        var out: [[UInt8]] = []
        for (b, index) in indices.enumerated() {
            if parameters.plaintextsPerEntry == 1 {
                let values = scheme.decryptCoefficients(response.ciphertexts[b], secretKey: secretKey)
                let slot = index % parameters.entriesPerPlaintext
                let bytes = packing.unpack(values, byteCount: (slot + 1) * parameters.entrySize)
                out.append(Array(bytes[(slot * parameters.entrySize)...]))
            } else {
                var bytes: [UInt8] = []
                for k in 0..<parameters.plaintextsPerEntry {
                    let values = scheme.decryptCoefficients(response.ciphertexts[b * parameters.plaintextsPerEntry + k], secretKey: secretKey)
                    let wanted = min(parameters.bytesPerPlaintext, parameters.entrySize - bytes.count)
                    bytes += packing.unpack(values, byteCount: wanted)
                }
                out.append(bytes)
            }
        }
        return out
    }
}
