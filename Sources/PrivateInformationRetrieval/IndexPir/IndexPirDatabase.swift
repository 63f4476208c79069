import HomomorphicEncryption

/// An index-PIR database encoded for a scheme: for each plaintext-sized chunk of the entries,
/// one prepared plaintext per grid cell (nil where the cell holds no entry).
public struct IndexPirDatabase<Scheme: HeScheme>: Sendable {
    public let parameters: IndexPirParameters
    /// chunks[k][p]: chunk k (bytes k·B ..< (k+1)·B of each entry when entries span several
    /// plaintexts) of plaintext p.
    public let chunks: [[Scheme.PreparedPlaintextType?]]

    /// A database from already prepared chunks (as loaded from a processed file).
    public init(parameters: IndexPirParameters, chunks: [[Scheme.PreparedPlaintextType?]]) {
        self.parameters = parameters
        self.chunks = chunks
    }

    /// Encodes `entries` (each at most `parameters.entrySize` bytes; missing trailing entries
    /// are empty).
    public init(entries: [[UInt8]], parameters: IndexPirParameters, scheme: Scheme) throws(PirError) {
        guard entries.count <= parameters.entryCount else {
            throw .indexOutOfRange(index: entries.count - 1, entryCount: parameters.entryCount)
        }
        for (i, entry) in entries.enumerated() where entry.count > parameters.entrySize {
            throw .entryTooLarge(index: i, size: entry.count, maximum: parameters.entrySize)
        }
        guard scheme.degree == parameters.degree, scheme.plaintextModulusValue == parameters.plaintextModulus else {
            throw .invalidParameters("database for N = \(parameters.degree), t = \(parameters.plaintextModulus); scheme has N = \(scheme.degree), t = \(scheme.plaintextModulusValue)")
        }
        self.parameters = parameters
        let packing = parameters.packing
        let cells = parameters.dimensions.reduce(1, *)
        var chunks: [[Scheme.PreparedPlaintextType?]] = []
        if parameters.plaintextsPerEntry == 1 {
            var chunk = [Scheme.PreparedPlaintextType?](repeating: nil, count: cells)
            let perPlaintext = parameters.entriesPerPlaintext, size = parameters.entrySize
            var p = 0
            while p * perPlaintext < entries.count {
                // The plaintext's byte string: its entries back to back, each zero-padded to
                // entrySize (Apple's `processPackEntries`).
                var bytes: [UInt8] = []
                bytes.reserveCapacity(perPlaintext * size)
                for index in (p * perPlaintext)..<min(entries.count, (p + 1) * perPlaintext) {
                    bytes += entries[index]
                    bytes += repeatElement(0, count: size - entries[index].count)
                }
                if bytes.contains(where: { $0 != 0 }) {
                    var coefficients: [UInt64] = []
                    coefficients.reserveCapacity(parameters.degree)
                    packing.pack(bytes, into: &coefficients)
                    chunk[p] = try he { () throws(HomomorphicEncryptionError) in try scheme.preparePlaintext(coefficients: coefficients) }
                }
                p += 1
            }
            chunks.append(chunk)
        } else {
            let bytesPerPlaintext = parameters.bytesPerPlaintext
            for k in 0..<parameters.plaintextsPerEntry {
                var chunk = [Scheme.PreparedPlaintextType?](repeating: nil, count: cells)
                for (index, entry) in entries.enumerated() {
                    let start = k * bytesPerPlaintext
                    guard start < entry.count else { continue }
                    let bytes = entry[start..<min(entry.count, start + bytesPerPlaintext)]
                    guard bytes.contains(where: { $0 != 0 }) else { continue }
                    var coefficients: [UInt64] = []
                    packing.pack(bytes, into: &coefficients)
                    chunk[index] = try he { () throws(HomomorphicEncryptionError) in try scheme.preparePlaintext(coefficients: coefficients) }
                }
                chunks.append(chunk)
            }
        }
        self.chunks = chunks
    }
}
