import Crypto
import Foundation
import HomomorphicEncryption
import PrivateInformationRetrieval
import SwiftProtobuf

/// What a server publishes for one keyword-PIR use case, and what a client rebuilds from it.
public struct KeywordPirConfiguration: Sendable, Equatable {
    public let encryptionParameters: EncryptionParameters
    public let keywordParameters: KeywordPirParameters
    public let shards: [KeywordPirShardConfiguration]

    public init(encryptionParameters: EncryptionParameters, keywordParameters: KeywordPirParameters, shards: [KeywordPirShardConfiguration]) {
        self.encryptionParameters = encryptionParameters
        self.keywordParameters = keywordParameters
        self.shards = shards
    }

    /// Galois elements and relinearization the client's evaluation key must cover.
    public var evaluationKeyConfig: ProtoEvaluationKeyConfig {
        var config = ProtoEvaluationKeyConfig()
        config.encryptionParameters = encryptionParameters.proto
        config.galoisElements = Set(shards.flatMap(\.indexParameters.galoisElements)).sorted().map(UInt32.init)
        config.hasRelinKey_p = shards.contains { $0.indexParameters.needsRelinearization }
        return config
    }

    /// SHA-256 of the serialized evaluation-key configuration: the key's identifier.
    public var evaluationKeyConfigHash: [UInt8] {
        evaluationKeyConfig.sha256
    }

    public var proto: ProtoPIRConfig {
        var message = ProtoPIRConfig()
        message.encryptionParameters = encryptionParameters.proto
        message.shardConfigs = shards.map { shard in
            var config = ProtoPIRShardConfig()
            config.numEntries = UInt64(shard.indexParameters.entryCount)
            config.entrySize = UInt64(shard.indexParameters.entrySize)
            config.dimensions = shard.indexParameters.dimensions.map(UInt64.init)
            return config
        }
        message.keywordPirParams.numHashFunctions = UInt64(keywordParameters.hashFunctionCount)
        message.keywordPirParams.netextBucketCapacity = UInt64(keywordParameters.bucketCapacity)
        message.keywordPirParams.netextValueSize = UInt64(keywordParameters.valueSize)
        message.keywordPirParams.shardingFunction = keywordParameters.shardingFunction.proto
        message.algorithm = .mulPir
        message.batchSize = UInt64(keywordParameters.hashFunctionCount)
        message.evaluationKeyConfigHash = Data(evaluationKeyConfigHash)
        return message
    }

    /// SHA-256 of the serialized configuration: the config id clients send back.
    public var configID: [UInt8] { proto.sha256 }

    /// Rebuilds the configuration from a server's message, checking every number.
    public init(proto message: ProtoPIRConfig) throws(PirError) {
        let parameters: EncryptionParameters
        do { parameters = try EncryptionParameters(proto: message.encryptionParameters) } catch { throw .homomorphic(error) }
        guard message.algorithm == .mulPir else { throw .invalidParameters("algorithm \(message.algorithm); NetExt serves MulPIR") }
        let keyword = message.keywordPirParams
        // Fields this client does not know change how keywords map to entries; ignoring them
        // would make every answer "absent", so such a configuration is refused. Apple's server
        // writes field 4 (the sharding function) always, SHA-256 included: that one is read.
        guard keyword.unknownFields.data.isEmpty, keyword.shardingFunction.unknownFields.data.isEmpty else {
            throw .invalidParameters("keyword PIR parameters carry fields this client does not know")
        }
        guard !keyword.hasSymmetricPirClientConfig else {
            throw .invalidParameters("the configuration asks for symmetric PIR (OPRF-encrypted entries), which this client does not support")
        }
        let sharding = try ShardingFunction(proto: keyword)
        // Apple's configurations carry only the hash-function count; NetExt's build parameters
        // (fields 100 and 101) come back when present and are otherwise irrelevant to a client.
        guard (1...8).contains(keyword.numHashFunctions), keyword.netextBucketCapacity <= 255, keyword.netextValueSize <= 65535 else {
            throw .invalidParameters("keyword parameters \(keyword.numHashFunctions) hash functions (1–8), capacity \(keyword.netextBucketCapacity), value size \(keyword.netextValueSize)")
        }
        guard message.batchSize == keyword.numHashFunctions else {
            throw .invalidParameters("batch size \(message.batchSize) differs from the \(keyword.numHashFunctions) hash functions")
        }
        let keywordParameters = try KeywordPirParameters(
            hashFunctionCount: Int(keyword.numHashFunctions),
            bucketCapacity: keyword.netextBucketCapacity == 0 ? 8 : Int(keyword.netextBucketCapacity),
            valueSize: keyword.netextValueSize == 0 ? 1 : Int(keyword.netextValueSize),
            shardCount: max(1, message.shardConfigs.count, Int(message.pirShardConfigs.repeatedShardConfig.shardCount)),
            shardingFunction: sharding)
        // Shards listed one by one, or (Apple's `pir_shard_configs`) one configuration repeated.
        var shardConfigs = message.shardConfigs
        if shardConfigs.isEmpty, case let .repeatedShardConfig(repeated)? = message.pirShardConfigs.shardConfigs {
            guard repeated.shardCount <= 1 << 16 else { throw .invalidParameters("\(repeated.shardCount) shards") }
            shardConfigs = Array(repeating: repeated.shardConfig, count: Int(repeated.shardCount))
        }
        guard !shardConfigs.isEmpty, shardConfigs.count <= 1 << 16 else {
            throw .invalidParameters("\(shardConfigs.count) shards")
        }
        var shards: [KeywordPirShardConfiguration] = []
        for config in shardConfigs {
            guard config.numEntries > 0, config.numEntries < 1 << 32, config.entrySize > 0, config.entrySize < 1 << 24,
                  config.dimensions.allSatisfy({ $0 > 0 && $0 < 1 << 24 })
            else {
                throw .invalidParameters("shard with \(config.numEntries) entries of \(config.entrySize) bytes, dimensions \(config.dimensions)")
            }
            let index = try IndexPirParameters(
                entryCount: Int(config.numEntries), entrySize: Int(config.entrySize), dimensions: config.dimensions.map { Int($0) },
                batchSize: keywordParameters.hashFunctionCount, degree: parameters.polyDegree, plaintextModulus: parameters.plaintextModulus)
            shards.append(KeywordPirShardConfiguration(bucketCount: index.entryCount, indexParameters: index))
        }
        self.init(encryptionParameters: parameters, keywordParameters: keywordParameters, shards: shards)
    }
}

extension ShardingFunction {
    /// Field 4 of `KeywordPirParameters`, written as Apple's server writes it (SHA-256 too, as
    /// an empty `sha256` message: bytes `22 02 0a 00`).
    public var proto: ProtoShardingFunction {
        var message = ProtoShardingFunction()
        switch self {
        case .sha256:
            message.sha256 = .init()
        case .doubleMod(let other):
            message.doubleMod.otherShardCount = UInt32(clamping: other)
        }
        return message
    }

    /// The sharding function `parameters` name; SHA-256 when the field is absent (older servers,
    /// NetExt's before it wrote the field).
    init(proto parameters: ProtoKeywordPirParameters) throws(PirError) {
        guard parameters.hasShardingFunction else { self = .sha256; return }
        switch parameters.shardingFunction.function {
        case .sha256?, nil:
            self = .sha256
        case .doubleMod(let doubleMod)?:
            guard doubleMod.otherShardCount > 0 else {
                throw .invalidParameters("double-mod sharding with other_shard_count 0")
            }
            self = .doubleMod(otherShardCount: Int(doubleMod.otherShardCount))
        }
    }
}

extension SwiftProtobuf.Message {
    /// SHA-256 of the serialized message: how configurations and evaluation-key configurations
    /// are named on the wire (Apple's pir-service-example names them the same way).
    public var sha256: [UInt8] {
        Array(SHA256.hash(data: (try? serializedBytes() as [UInt8]) ?? []))
    }
}
