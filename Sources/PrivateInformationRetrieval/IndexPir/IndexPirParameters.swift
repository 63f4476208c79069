/// The shape of an index-PIR database: entries of a fixed size packed into plaintexts, the
/// plaintexts arranged in a grid of one or two dimensions (MulPIR: Ali et al.,
/// "Communication–Computation Trade-offs in PIR", USENIX Security 2021), and how many
/// indices one query asks for.
public struct IndexPirParameters: Sendable, Hashable, Codable {
    public let entryCount: Int
    /// Bytes per entry (shorter entries are zero-padded).
    public let entrySize: Int
    /// Grid sizes: [d1] or [d1, d2], with d1·d2 ≥ the plaintext count.
    public let dimensions: [Int]
    /// How many indices one query retrieves.
    public let batchSize: Int
    /// Ring degree and plaintext modulus of the scheme the database is encoded for.
    public let degree: Int
    public let plaintextModulus: UInt32

    /// Parameters with dimensions chosen for `entryCount` entries: two dimensions, the first
    /// about `dimensionRatio` times the second (the first costs one plaintext product per
    /// row, the second a ciphertext product per column), or one for tiny databases.
    public init(
        entryCount: Int, entrySize: Int, batchSize: Int, degree: Int, plaintextModulus: UInt32,
        dimensionCount: Int = 2, dimensionRatio: Double = 4
    ) throws(PirError) {
        guard entryCount > 0, entrySize > 0, batchSize > 0, dimensionCount == 1 || dimensionCount == 2 else {
            throw .invalidParameters("entries \(entryCount), entry size \(entrySize), batch \(batchSize), dimensions \(dimensionCount)")
        }
        let bytesPerPlaintext = CoefficientPacking(plaintextModulus: plaintextModulus).byteCount(forCoefficients: degree)
        let perPlaintext = entrySize <= bytesPerPlaintext ? bytesPerPlaintext / entrySize : 1
        let plaintextCount = (entryCount + perPlaintext - 1) / perPlaintext
        let dimensions: [Int]
        if dimensionCount == 1 || plaintextCount == 1 {
            dimensions = [plaintextCount]
        } else {
            let second = max(1, Int((Double(plaintextCount) / dimensionRatio).squareRoot().rounded()))
            let first = (plaintextCount + second - 1) / second
            dimensions = Self.fittingExpansion([first, second], plaintextCount: plaintextCount, batchSize: batchSize)
        }
        try self.init(entryCount: entryCount, entrySize: entrySize, dimensions: dimensions, batchSize: batchSize,
                      degree: degree, plaintextModulus: plaintextModulus)
    }

    /// The query expands into batchSize·(d1 + d2) selectors, and every doubling of that count past
    /// a power of two costs one more expansion level and one more Galois key (≈ 85 KB at N = 4096).
    /// When a slightly wider second dimension (at most twice as wide, so the work stays near the
    /// ratio's optimum) brings the count under the power of two below, it is used: a million rows
    /// in one shard go from [112, 27] (278 selectors, 9 levels) to [95, 32] (254, 8 levels).
    static func fittingExpansion(_ dimensions: [Int], plaintextCount: Int, batchSize: Int) -> [Int] {
        let selectors = batchSize * (dimensions[0] + dimensions[1])
        guard selectors > 1, selectors.nonzeroBitCount != 1 else { return dimensions }
        let budget = (1 << (Int.bitWidth - 1 - selectors.leadingZeroBitCount)) / batchSize  // d1 + d2 allowed
        let second = dimensions[1]
        for wider in second...(2 * second) {
            let first = (plaintextCount + wider - 1) / wider
            if first + wider <= budget, first >= wider { return [first, wider] }
        }
        return dimensions
    }

    /// Parameters with explicit dimensions (as received from a server's configuration).
    public init(
        entryCount: Int, entrySize: Int, dimensions: [Int], batchSize: Int, degree: Int, plaintextModulus: UInt32
    ) throws(PirError) {
        self.entryCount = entryCount
        self.entrySize = entrySize
        self.dimensions = dimensions
        self.batchSize = batchSize
        self.degree = degree
        self.plaintextModulus = plaintextModulus
        guard plaintextModulus >= 2, degree >= 2, degree.nonzeroBitCount == 1 else {
            throw .invalidParameters("degree \(degree), plaintext modulus \(plaintextModulus)")
        }
        guard entryCount > 0, entrySize > 0, batchSize > 0, (1...2).contains(dimensions.count), dimensions.allSatisfy({ $0 > 0 }) else {
            throw .invalidParameters("entries \(entryCount), entry size \(entrySize), batch \(batchSize), dimensions \(dimensions)")
        }
        guard dimensions.reduce(1, *) >= plaintextCount else {
            throw .invalidParameters("dimensions \(dimensions) hold \(dimensions.reduce(1, *)) plaintexts, \(plaintextCount) needed")
        }
        guard batchSize * dimensions.reduce(0, +) <= degree * 64 else {
            throw .invalidParameters("batch \(batchSize) × selectors \(dimensions.reduce(0, +)) needs too many query ciphertexts")
        }
    }

    var packing: CoefficientPacking { CoefficientPacking(plaintextModulus: plaintextModulus) }

    /// Bytes one plaintext holds: ⌊N·⌊log2 t⌋ / 8⌋.
    public var bytesPerPlaintext: Int { packing.byteCount(forCoefficients: degree) }
    /// Entries per plaintext (1 when an entry spans several plaintexts). Entries sharing a
    /// plaintext lie back to back in its byte string (entry i of the plaintext at bytes
    /// i·entrySize ..< (i+1)·entrySize), as in Apple's MulPIR, so they may straddle coefficients.
    public var entriesPerPlaintext: Int { entrySize <= bytesPerPlaintext ? bytesPerPlaintext / entrySize : 1 }
    /// Plaintexts per entry (1 unless entries exceed a plaintext); each is a separate response.
    public var plaintextsPerEntry: Int { (entrySize + bytesPerPlaintext - 1) / bytesPerPlaintext }
    /// Plaintexts in each chunk of the database.
    public var plaintextCount: Int { (entryCount + entriesPerPlaintext - 1) / entriesPerPlaintext }
    /// Selector coefficients per retrieved index.
    public var selectorsPerIndex: Int { dimensions.reduce(0, +) }
    /// Query ciphertexts per query.
    public var queryCiphertextCount: Int { (batchSize * selectorsPerIndex + degree - 1) / degree }
    /// Response ciphertexts per query.
    public var responseCiphertextCount: Int { batchSize * plaintextsPerEntry }
    /// Whether the server needs a relinearization key (two dimensions).
    public var needsRelinearization: Bool { dimensions.count == 2 }

    /// Coefficient count of query ciphertext `k` (the last may be partly used).
    func usedCoefficients(inQuery k: Int) -> Int {
        min(degree, batchSize * selectorsPerIndex - k * degree)
    }

    /// Expansion levels for query ciphertext `k`: ⌈log2(used coefficients)⌉.
    func expansionLevels(inQuery k: Int) -> Int {
        let used = usedCoefficients(inQuery: k)
        return used <= 1 ? 0 : Int.bitWidth - (used - 1).leadingZeroBitCount
    }

    /// The Galois elements query expansion uses: N/2^j + 1 for every level any query needs.
    public var galoisElements: [Int] {
        let levels = (0..<queryCiphertextCount).map { expansionLevels(inQuery: $0) }.max() ?? 0
        return (0..<levels).map { degree / (1 << $0) + 1 }
    }

    /// Grid coordinates of a plaintext index: (row in dimension 1, column in dimension 2).
    func coordinates(ofPlaintext p: Int) -> (Int, Int) {
        dimensions.count == 2 ? (p / dimensions[1], p % dimensions[1]) : (p, 0)
    }
}
