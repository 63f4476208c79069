import Foundation
import HomomorphicEncryption
import PIRService
import PIRProtobuf
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
        let second = try makeDatabase(context)
        try ProcessedShardFile.write([database, second], context: context, to: path)
        let back = try ProcessedShardFile.read(path: path, context: context)
        #expect(back.count == 2)
        #expect(back[0].parameters == database.parameters)
        #expect(back[0].chunks == database.chunks)
        #expect(back[1].chunks == second.chunks)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 2] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(throws: PIRServiceError.databaseFile(path: path, reason: "checksum mismatch (truncated or corrupted)")) {
            try ProcessedShardFile.read(path: path, context: context)
        }
        try Data(bytes.prefix(100)).write(to: URL(fileURLWithPath: path))
        #expect(throws: PIRServiceError.self) { try ProcessedShardFile.read(path: path, context: context) }
        // A file for other parameters is refused by name.
        try ProcessedShardFile.write([database], context: context, to: path)
        let other = try BFVContext(parameters: .insecureN64)
        #expect(throws: PIRServiceError.self) { try ProcessedShardFile.read(path: path, context: other) }
    }
}

@Suite("PIR configuration from a server")
struct PIRConfigurationParsingTests {
    /// A server's PIRConfig is untrusted input: random field values give a configuration or a
    /// PirError, never a crash or an unbounded allocation.
    @Test func randomConfigurationsAreValidatedOrRefused() throws {
        var state: UInt64 = 0xDEADBEEF
        func next(_ bound: UInt64) -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return (state >> 20) % bound }
        let valid = EncryptionParameters.n4096LogQ27_28_28LogT5.proto
        var accepted = 0
        for trial in 0..<2000 {
            var message = ProtoPIRConfig()
            message.encryptionParameters = valid
            if trial % 7 == 0 { message.encryptionParameters.coefficientModuli = [next(1 << 31), next(1 << 31)] }
            if trial % 11 == 0 { message.encryptionParameters.polynomialDegree = next(1 << 20) }
            message.algorithm = trial % 13 == 0 ? .aclsPir : .mulPir
            message.keywordPirParams.numHashFunctions = next(4)
            message.keywordPirParams.netextBucketCapacity = next(20)
            message.keywordPirParams.netextValueSize = next(4)
            let plausible = trial % 3 == 0
            if plausible {
                message.keywordPirParams.numHashFunctions = 1 + next(2)
                message.keywordPirParams.netextBucketCapacity = 8
                message.keywordPirParams.netextValueSize = 1
                message.batchSize = message.keywordPirParams.numHashFunctions
            }
            for _ in 0..<Int(plausible ? 1 + next(3) : next(4)) {
                var shard = ProtoPIRShardConfig()
                if plausible {
                    shard.numEntries = 1 + next(2000)
                    shard.entrySize = 72
                    let plaintexts = (shard.numEntries + 27) / 28
                    shard.dimensions = next(2) == 0 ? [plaintexts] : [(plaintexts + 1) / 2, 2]
                } else {
                    shard.numEntries = next(1 << 34)
                    shard.entrySize = next(200)
                    shard.dimensions = (0..<Int(next(4))).map { _ in next(1 << 26) }
                }
                message.shardConfigs.append(shard)
            }
            do {
                let configuration = try KeywordPirConfiguration(proto: message)
                accepted += 1
                for shard in configuration.shards {
                    #expect(shard.indexParameters.queryCiphertextCount <= 64)
                    #expect(shard.indexParameters.dimensions.reduce(1, *) >= shard.indexParameters.plaintextCount)
                }
            } catch {}
        }
        #expect(accepted > 0)
    }

    /// What an Apple-style server may send: one shard configuration repeated for every shard
    /// (`pir_shard_configs`) is read; keyword parameters with fields this client does not know
    /// (symmetric PIR, other sharding functions) are refused instead of silently misread.
    @Test func appleStyleConfigurations() throws {
        var message = ProtoPIRConfig()
        message.encryptionParameters = EncryptionParameters.n4096LogQ27_28_28LogT5.proto
        message.algorithm = .mulPir
        message.keywordPirParams.numHashFunctions = 2
        message.batchSize = 2
        var shard = ProtoPIRShardConfig()
        shard.numEntries = 100
        shard.entrySize = 89
        shard.dimensions = [5, 1]
        var repeated = Apple_SwiftHomomorphicEncryption_Api_Pir_V1_PIRFixedShardConfig()
        repeated.shardConfig = shard
        repeated.shardCount = 3
        message.pirShardConfigs.repeatedShardConfig = repeated
        let configuration = try KeywordPirConfiguration(proto: message)
        #expect(configuration.shards.count == 3)
        #expect(configuration.keywordParameters.shardCount == 3)
        #expect(configuration.shards[2].indexParameters.entriesPerPlaintext == 23)

        // Symmetric PIR (field 3: config_type = 1) is refused: this client cannot decrypt it.
        var bytes: [UInt8] = try message.keywordPirParams.serializedBytes()
        message.keywordPirParams = try ProtoKeywordPirParameters(serializedBytes: bytes + [0x1A, 0x02, 0x10, 0x01])
        #expect(throws: PirError.self) { try KeywordPirConfiguration(proto: message) }
        // So is a field this client does not know at all (field 5).
        bytes += [0x28, 0x01]
        message.keywordPirParams = try ProtoKeywordPirParameters(serializedBytes: bytes)
        #expect(throws: PirError.self) { try KeywordPirConfiguration(proto: message) }
    }
}
