import Foundation
import HomomorphicEncryption
import PIRService
import PrivateInformationRetrieval
import Testing

@Suite("Processed shard files")
struct ProcessedShardFileTests {
    func makeDatabase(_ context: BFVContext) throws -> IndexPirDatabase<BFVContext> {
        var rng = ChaCha20Generator.systemSeeded()
        let entries = (0..<300).map { i in i % 5 == 0 ? [] : (0..<9).map { _ in UInt8(truncatingIfNeeded: rng.nextWord()) } }
        let parameters = try IndexPirParameters(entryCount: 300, entrySize: 9, batchSize: 2, degree: context.degree, plaintextModulus: context.plaintextModulusValue)
        return try IndexPirDatabase(entries: entries, parameters: parameters, scheme: context)
    }

    @Test func roundTripAndCorruptionIsNamed() throws {
        let context = try BFVContext(parameters: .insecureN256T17)
        let database = try makeDatabase(context)
        let path = NSTemporaryDirectory() + "netext-shard-\(UUID().uuidString).pirdb"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try ProcessedShardFile.write(database, context: context, to: path)
        let back = try ProcessedShardFile.read(path: path, context: context)
        #expect(back.parameters == database.parameters)
        #expect(back.chunks == database.chunks)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 2] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(throws: PIRServiceError.databaseFile(path: path, reason: "checksum mismatch (truncated or corrupted)")) {
            try ProcessedShardFile.read(path: path, context: context)
        }
        try Data(bytes.prefix(100)).write(to: URL(fileURLWithPath: path))
        #expect(throws: PIRServiceError.self) { try ProcessedShardFile.read(path: path, context: context) }
        // A file for other parameters is refused by name.
        try ProcessedShardFile.write(database, context: context, to: path)
        let other = try BFVContext(parameters: .insecureN64)
        #expect(throws: PIRServiceError.self) { try ProcessedShardFile.read(path: path, context: other) }
    }
}
