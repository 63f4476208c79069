import Foundation
import NetExtCore
import HomomorphicEncryption
import PIRProtobuf
import PrivateInformationRetrieval
import SwiftProtobuf
import NetExtLinux

/// One keyword-PIR use case as served: its published configuration and a server per shard.
public struct PIRUseCase: Sendable {
    public let name: String
    public let configuration: KeywordPirConfiguration
    public let context: BFVContext
    public let shards: [IndexPirServer<BFVContext>]
    /// SHA-256 of the serialized PIRConfig (clients echo it in queries).
    public let configID: [UInt8]
    public let evaluationKeyConfigHash: [UInt8]

    public init(name: String, configuration: KeywordPirConfiguration, context: BFVContext, shards: [IndexPirServer<BFVContext>]) {
        self.name = name
        self.configuration = configuration
        self.context = context
        self.shards = shards
        configID = configuration.configID
        evaluationKeyConfigHash = configuration.evaluationKeyConfigHash
    }

    /// Use case names: `<app identifier>.url.filtering` and the like — letters, digits, `.`, `-`, `_`.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 128 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-".unicodeScalars.contains($0) }
    }
}

/// Reads and writes the database directory `netext-urlfilter-db build` produces and
/// `netext-server pir` serves: `DIR/pir/<use case>/config.binpb` (a PIRConfig) and
/// `DIR/pir/<use case>/shard-NNNN.pirdb` (``ProcessedShardFile``).
public enum PIRDatabaseDirectory {
    public static func useCaseDirectory(root: String, useCase: String) -> String { "\(root)/pir/\(useCase)" }
    static func shardPath(_ directory: String, _ index: Int) -> String { String(format: "%@/shard-%04d.pirdb", directory, index) }

    /// Writes a processed keyword database for `useCase`.
    public static func write(
        _ database: KeywordDatabase<BFVContext>, context: BFVContext, useCase: String, root: String
    ) throws(PIRServiceError) {
        guard PIRUseCase.isValidName(useCase) else { throw .malformedRequest("use case name '\(useCase)'") }
        let directory = useCaseDirectory(root: root, useCase: useCase)
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw .databaseFile(path: directory, reason: "cannot create: \(error.localizedDescription)")
        }
        for (index, shard) in database.shards.enumerated() {
            try ProcessedShardFile.write(shard, context: context, to: shardPath(directory, index))
        }
        let configuration = KeywordPirConfiguration(
            encryptionParameters: context.parameters, keywordParameters: database.parameters, shards: database.configurations)
        let bytes: [UInt8]
        do { bytes = try configuration.proto.serializedBytes() } catch {
            throw .databaseFile(path: directory, reason: "cannot encode the configuration")
        }
        let path = "\(directory)/config.binpb"
        do throws(AtomicFile.Failure) { try AtomicFile.write(bytes, to: path) } catch {
            throw .databaseFile(path: path, reason: error.reason)
        }
    }

    /// Loads every use case under `root/pir`; `threads` is the per-query thread count.
    public static func load(root: String, threads: Int) throws(PIRServiceError) -> [String: PIRUseCase] {
        let base = "\(root)/pir"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else {
            throw .databaseFile(path: base, reason: "no such directory (build one with netext-urlfilter-db build)")
        }
        var contexts: [EncryptionParameters: BFVContext] = [:]
        var useCases: [String: PIRUseCase] = [:]
        for name in names.sorted() where PIRUseCase.isValidName(name) {
            let directory = "\(base)/\(name)"
            let configPath = "\(directory)/config.binpb"
            guard let data = FileManager.default.contents(atPath: configPath) else { continue }
            let configuration: KeywordPirConfiguration
            do {
                configuration = try KeywordPirConfiguration(proto: try ProtoPIRConfig(serializedBytes: [UInt8](data)))
            } catch {
                throw .databaseFile(path: configPath, reason: "\(error)")
            }
            let context: BFVContext
            if let existing = contexts[configuration.encryptionParameters] {
                context = existing
            } else {
                do { context = try BFVContext(parameters: configuration.encryptionParameters) } catch {
                    throw .databaseFile(path: configPath, reason: error.description)
                }
                contexts[configuration.encryptionParameters] = context
            }
            var shards: [IndexPirServer<BFVContext>] = []
            for (index, shard) in configuration.shards.enumerated() {
                let path = shardPath(directory, index)
                let tables = try ProcessedShardFile.read(path: path, context: context)
                guard tables[0].parameters == shard.indexParameters else {
                    throw .databaseFile(path: path, reason: "shard parameters differ from config.binpb")
                }
                do throws(PirError) {
                    shards.append(try IndexPirServer(scheme: context, databases: tables, threads: threads))
                } catch { throw .databaseFile(path: path, reason: error.description) }
            }
            useCases[name] = PIRUseCase(name: name, configuration: configuration, context: context, shards: shards)
        }
        guard !useCases.isEmpty else { throw .databaseFile(path: base, reason: "no use case (DIR/pir/<name>/config.binpb) found") }
        return useCases
    }
}
