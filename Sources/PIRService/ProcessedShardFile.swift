import Crypto
import Foundation
import NetExtCore
import HomomorphicEncryption
import PrivateInformationRetrieval
import NetExtLinux

/// A processed PIR shard on disk: its cuckoo tables' prepared plaintexts in NTT form, so a
/// server loads them without recomputing. Layout (all integers little-endian;
/// docs/pir-protocol.md):
///
///     "NXPIRSH2"                      8-byte magic
///     u32 degree, u32 level, u32 × level primes
///     u64 entryCount, u32 entrySize, u32 batchSize, u32 dimensionCount, u32 × dimensionCount
///     u32 tableCount, u32 chunkCount, u32 cellCount
///     tableCount × chunkCount × cellCount × { u8 present; if 1: level × degree u32 residues }
///     32-byte SHA-256 of everything before it
///
/// Written to a temporary file, synced and renamed, so a crash never leaves a half file under
/// the final name.
public enum ProcessedShardFile {
    static let magic = Array("NXPIRSH2".utf8)

    public static func write(_ tables: [IndexPirDatabase<BFVContext>], context: BFVContext, to path: String) throws(PIRServiceError) {
        var out = [UInt8]()
        let parameters = tables[0].parameters
        precondition(tables.allSatisfy { $0.parameters == parameters && $0.chunks.count == tables[0].chunks.count })
        let level = context.maximumLevel
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { out += $0 } }
        func u64(_ v: Int) { withUnsafeBytes(of: UInt64(v).littleEndian) { out += $0 } }
        out += magic
        u32(context.degree); u32(level)
        for q in context.moduli.prefix(level) { u32(Int(q.value)) }
        u64(parameters.entryCount); u32(parameters.entrySize); u32(parameters.batchSize)
        u32(parameters.dimensions.count)
        for d in parameters.dimensions { u32(d) }
        u32(tables.count); u32(tables[0].chunks.count); u32(tables[0].chunks.first?.count ?? 0)
        for table in tables {
            for chunk in table.chunks {
                for cell in chunk {
                    guard let cell else { out.append(0); continue }
                    out.append(1)
                    cell.poly.storage.withUnsafeBytes { out += $0 }  // little-endian hosts only (checked at load)
                }
            }
        }
        out += SHA256.hash(data: out)
        do throws(AtomicFile.Failure) { try AtomicFile.write(out, to: path) } catch {
            throw .databaseFile(path: path, reason: error.reason)
        }
    }

    /// The shard's tables (one per hash function, or one).
    public static func read(path: String, context: BFVContext) throws(PIRServiceError) -> [IndexPirDatabase<BFVContext>] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .databaseFile(path: path, reason: "cannot read")
        }
        let bytes = [UInt8](data)
        guard bytes.count >= magic.count + 32, Array(bytes.prefix(magic.count)) == magic else {
            throw .databaseFile(path: path, reason: "not a NetExt processed shard (bad magic)")
        }
        let body = bytes[..<(bytes.count - 32)]
        guard Array(SHA256.hash(data: body)) == Array(bytes.suffix(32)) else {
            throw .databaseFile(path: path, reason: "checksum mismatch (truncated or corrupted)")
        }
        var offset = magic.count
        func need(_ count: Int, _ what: String) throws(PIRServiceError) {
            guard offset + count <= body.count else { throw .databaseFile(path: path, reason: "truncated at offset \(offset) reading \(what)") }
        }
        func u32(_ what: String) throws(PIRServiceError) -> Int {
            try need(4, what)
            let v = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
            offset += 4
            return Int(v)
        }
        func u64(_ what: String) throws(PIRServiceError) -> Int {
            try need(8, what)
            let v = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
            offset += 8
            return Int(truncatingIfNeeded: v)
        }
        let degree = try u32("degree"), level = try u32("level")
        guard degree == context.degree, level == context.maximumLevel else {
            throw .databaseFile(path: path, reason: "encoded for N = \(degree) with \(level) primes; the server uses N = \(context.degree) with \(context.maximumLevel)")
        }
        for i in 0..<level {
            let q = try u32("prime \(i)")
            guard q == Int(context.moduli[i].value) else {
                throw .databaseFile(path: path, reason: "prime \(i) is \(q), expected \(context.moduli[i].value)")
            }
        }
        let entryCount = try u64("entry count"), entrySize = try u32("entry size"), batchSize = try u32("batch size")
        let dimensionCount = try u32("dimension count")
        guard (1...2).contains(dimensionCount) else { throw .databaseFile(path: path, reason: "\(dimensionCount) dimensions") }
        var dimensions: [Int] = []
        for i in 0..<dimensionCount { dimensions.append(try u32("dimension \(i)")) }
        let parameters: IndexPirParameters
        do throws(PirError) {
            parameters = try IndexPirParameters(
                entryCount: entryCount, entrySize: entrySize, dimensions: dimensions, batchSize: batchSize,
                degree: degree, plaintextModulus: context.plaintextModulusValue)
        } catch { throw .databaseFile(path: path, reason: error.description) }
        let tableCount = try u32("table count"), chunkCount = try u32("chunk count"), cellCount = try u32("cell count")
        guard tableCount == 1 || tableCount == batchSize else {
            throw .databaseFile(path: path, reason: "\(tableCount) tables for a batch of \(batchSize)")
        }
        guard chunkCount == parameters.plaintextsPerEntry, cellCount == dimensions.reduce(1, *) else {
            throw .databaseFile(path: path, reason: "\(chunkCount) chunks of \(cellCount) cells do not match the parameters")
        }
        let rowWords = level * degree
        var tables: [IndexPirDatabase<BFVContext>] = []
        for table in 0..<tableCount {
            var chunks: [[PreparedPlaintext?]] = []
            for c in 0..<chunkCount {
                var cells: [PreparedPlaintext?] = []
                cells.reserveCapacity(cellCount)
                for cell in 0..<cellCount {
                    try need(1, "cell \(cell) of chunk \(c) of table \(table)")
                    let present = bytes[offset]
                    offset += 1
                    guard present <= 1 else { throw .databaseFile(path: path, reason: "bad cell marker \(present) at offset \(offset - 1)") }
                    guard present == 1 else { cells.append(nil); continue }
                    try need(rowWords * 4, "cell \(cell) of chunk \(c) of table \(table)")
                    var storage = [UInt32](repeating: 0, count: rowWords)
                    storage.withUnsafeMutableBytes { target in
                        bytes.withUnsafeBytes { source in
                            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<(offset + rowWords * 4)]))
                        }
                    }
                    offset += rowWords * 4
                    for (i, q) in context.moduli.prefix(level).enumerated() {
                        guard !storage[(i * degree)..<((i + 1) * degree)].contains(where: { $0 >= q.value }) else {
                            throw .databaseFile(path: path, reason: "cell \(cell) of chunk \(c) holds a residue not below \(q.value)")
                        }
                    }
                    cells.append(PreparedPlaintext(poly: RNSPolynomial(ntt: storage, degree: degree, moduliCount: level)))
                }
                chunks.append(cells)
            }
            tables.append(IndexPirDatabase(parameters: parameters, chunks: chunks))
        }
        guard offset == body.count else { throw .databaseFile(path: path, reason: "\(body.count - offset) unexpected bytes after the cells") }
        return tables
    }
}
