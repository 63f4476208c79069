import Dispatch
import Foundation
import HomomorphicEncryption
import PIRProtobuf
import PrivateInformationRetrieval
import SwiftProtobuf
import Synchronization

/// The PIR service's logic, bytes in and bytes out (the HTTP layer is `PIRHTTPServer`):
/// `/config`, `/key` and `/queries` as in Apple's PIR service protocol (docs/pir-protocol.md).
/// It never logs or stores query contents; the only per-user state is the evaluation key.
public final class PIRRequestHandler: Sendable {
    private let useCases: Mutex<[String: PIRUseCase]>
    public let keys: EvaluationKeyStore
    public let metrics: PIRMetrics

    /// Queries one /queries message may hold: 64 by the protocol; lower it to bound what one
    /// request (with Privacy Pass, one token) can cost.
    public let maximumQueriesPerRequest: Int

    /// Body size limits per endpoint.
    public static let limits = ["/config": 64 << 10, "/key": 16 << 20, "/queries": 8 << 20]

    /// The most queries one message may hold under the protocol.
    public static let protocolMaximumQueries = 64

    public init(
        useCases: [String: PIRUseCase], keyCapacity: Int = 256, keyByteBudget: Int = EvaluationKeyStore.defaultByteBudget,
        maximumQueriesPerRequest: Int = PIRRequestHandler.protocolMaximumQueries, metrics: PIRMetrics = PIRMetrics()
    ) {
        self.useCases = Mutex(useCases)
        self.maximumQueriesPerRequest = min(max(1, maximumQueriesPerRequest), Self.protocolMaximumQueries)
        keys = EvaluationKeyStore(capacity: keyCapacity, byteBudget: keyByteBudget)
        self.metrics = metrics
    }

    /// Swaps in freshly loaded use cases (SIGHUP).
    public func replaceUseCases(_ new: [String: PIRUseCase]) { useCases.withLock { $0 = new } }

    public var useCaseNames: [String] { useCases.withLock { $0.keys.sorted() } }

    private func useCase(_ name: String) throws(PIRServiceError) -> PIRUseCase {
        guard let found = useCases.withLock({ $0[name] }) else { throw .unknownUseCase(name) }
        return found
    }

    /// POST /config: configurations for the named use cases (all when none named), and the
    /// status of this user's keys.
    public func handleConfig(body: [UInt8], user: String?) throws(PIRServiceError) -> [UInt8] {
        let request: ProtoConfigRequest
        do { request = try ProtoConfigRequest(serializedBytes: body) } catch { throw .malformedRequest("ConfigRequest: \(error)") }
        let all = useCases.withLock { $0 }
        let names = request.usecases.isEmpty ? all.keys.sorted() : request.usecases
        var response = ProtoConfigResponse()
        var keyConfigs: [[UInt8]: ProtoEvaluationKeyConfig] = [:]
        for (index, name) in names.enumerated() {
            guard let useCase = all[name] else { throw .unknownUseCase(name) }
            var config = ProtoConfig()
            config.configID = Data(useCase.configID)
            if index < request.existingConfigIds.count, Array(request.existingConfigIds[index]) == useCase.configID {
                config.reuseExistingConfig = true
            } else {
                config.pirConfig = useCase.configuration.proto
            }
            response.configs[name] = config
            keyConfigs[useCase.evaluationKeyConfigHash] = useCase.configuration.evaluationKeyConfig
        }
        for (hash, keyConfig) in keyConfigs.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            var status = ProtoKeyStatus()
            status.keyConfig = keyConfig
            status.timestamp = user.map { keys.timestamp(user: $0, configHash: hash) } ?? 0
            response.keyInfo.append(status)
        }
        return serialize(response)
    }

    /// POST /key: stores each evaluation key under (user, key-config hash) after checking it
    /// deserializes for a configuration this server has.
    public func handleKey(body: [UInt8], user: String?) throws(PIRServiceError) {
        guard let user, !user.isEmpty else { throw .missingUserIdentifier }
        let upload: ProtoEvaluationKeys
        do { upload = try ProtoEvaluationKeys(serializedBytes: body) } catch { throw .malformedRequest("EvaluationKeys: \(error)") }
        guard !upload.keys.isEmpty, upload.keys.count <= 16 else { throw .malformedRequest("\(upload.keys.count) keys in one upload (1–16)") }
        let all = useCases.withLock { $0 }
        for key in upload.keys {
            let hash = Array(key.metadata.identifier)
            guard let useCase = all.values.first(where: { $0.evaluationKeyConfigHash == hash }) else {
                throw .malformedRequest("evaluation key for an unknown configuration")
            }
            keys.store(try deserializeKey(key.evaluationKey, for: useCase), user: user, configHash: hash, timestamp: key.metadata.timestamp)
        }
    }

    private func deserializeKey(_ message: ProtoSerializedEvaluationKey, for useCase: PIRUseCase) throws(PIRServiceError) -> EvaluationKey {
        do {
            let key = try useCase.context.deserialize(try SerializedEvaluationKey(proto: message))
            let config = useCase.configuration.evaluationKeyConfig
            guard Set(config.galoisElements.map(Int.init)).isSubset(of: key.galoisKeys.keys),
                  !config.hasRelinKey_p || key.relinearizationKey != nil
            else { throw HomomorphicEncryptionError.malformed("evaluation key lacks elements the configuration needs") }
            return key
        } catch { throw .malformedRequest("evaluation key: \(error)") }
    }

    /// A /queries message parsed and checked, ready to be answered one query at a time.
    public struct PreparedQueries: @unchecked Sendable {
        struct Query {
            let useCase: PIRUseCase
            let shard: Int
            let ciphertexts: [Ciphertext]
            let evaluationKey: EvaluationKey
            /// The stored key's owner, promoted once a query with it has been answered.
            let storedKeyUser: String?
        }

        let queries: [Query]
        /// How many queries the message holds.
        public var count: Int { queries.count }
    }

    /// POST /queries: answers each request with the user's stored (or inline) key.
    public func handleQueries(body: [UInt8], user: String?) throws(PIRServiceError) -> [UInt8] {
        let prepared = try prepareQueries(body: body, user: user)
        var responses: [ProtoResponse] = []
        for index in 0..<prepared.count { responses.append(try answer(prepared, at: index).get()) }
        return serialize(responses)
    }

    /// The cheap part of /queries: decodes the message and checks every query (use case,
    /// configuration, shard, key, ciphertext shapes) before any homomorphic work.
    public func prepareQueries(body: [UInt8], user: String?) throws(PIRServiceError) -> PreparedQueries {
        let requests: ProtoRequests
        do { requests = try ProtoRequests(serializedBytes: body) } catch { throw .malformedRequest("Requests: \(error)") }
        guard !requests.requests.isEmpty, requests.requests.count <= maximumQueriesPerRequest else {
            throw .malformedRequest("\(requests.requests.count) requests in one message (1–\(maximumQueriesPerRequest))")
        }
        var queries: [PreparedQueries.Query] = []
        for request in requests.requests {
            guard case let .pirRequest(pir) = request.request else { throw .malformedRequest("request without a PIR request") }
            let useCase = try useCase(request.usecase)
            guard Array(pir.configurationHash) == useCase.configID else { throw .configurationChanged(useCase: useCase.name) }
            guard Int(pir.shardIndex) < useCase.shards.count else {
                throw .malformedRequest("shard \(pir.shardIndex) of \(useCase.shards.count)")
            }
            let server = useCase.shards[Int(pir.shardIndex)]
            guard pir.query.ciphertexts.count == server.parameters.queryCiphertextCount else {
                throw .malformedRequest("query has \(pir.query.ciphertexts.count) ciphertexts, expected \(server.parameters.queryCiphertextCount)")
            }
            guard pir.query.numPirCalls == UInt64(server.parameters.batchSize) else {
                throw .malformedRequest("query asks for \(pir.query.numPirCalls) indices (num_pir_calls), this use case answers \(server.parameters.batchSize)")
            }
            var ciphertexts: [Ciphertext] = []
            for (index, message) in pir.query.ciphertexts.enumerated() {
                do {
                    let ciphertext = try useCase.context.deserialize(try SerializedCiphertext(proto: message))
                    guard ciphertext.polys.count == 2, ciphertext.level == useCase.context.maximumLevel else {
                        throw HomomorphicEncryptionError.malformed("query ciphertexts must be fresh (2 polynomials, top level)")
                    }
                    ciphertexts.append(ciphertext)
                } catch { throw .malformedRequest("query ciphertext \(index): \(error)") }
            }
            let evaluationKey: EvaluationKey
            var storedKeyUser: String?
            if pir.hasEvaluationKey {
                evaluationKey = try deserializeKey(pir.evaluationKey.evaluationKey, for: useCase)
            } else {
                guard let user, !user.isEmpty else { throw .missingUserIdentifier }
                guard Array(pir.evaluationKeyMetadata.identifier) == useCase.evaluationKeyConfigHash,
                      let stored = keys.key(user: user, configHash: useCase.evaluationKeyConfigHash)
                else { throw .evaluationKeyNotFound }
                evaluationKey = stored
                storedKeyUser = user
            }
            queries.append(.init(useCase: useCase, shard: Int(pir.shardIndex), ciphertexts: ciphertexts, evaluationKey: evaluationKey, storedKeyUser: storedKeyUser))
        }
        return PreparedQueries(queries: queries)
    }

    /// The costly part: the homomorphic answer to one prepared query.
    public func answer(_ prepared: PreparedQueries, at index: Int) -> Result<ProtoResponse, PIRServiceError> {
        let query = prepared.queries[index]
        let server = query.useCase.shards[query.shard]
        let start = DispatchTime.now().uptimeNanoseconds
        let answer: IndexPirResponse<BFVContext>
        do throws(PirError) {
            answer = try server.respond(to: IndexPirQuery(ciphertexts: query.ciphertexts), evaluationKey: query.evaluationKey)
        } catch { return .failure(.pir(error)) }
        metrics.recordQuery(nanoseconds: DispatchTime.now().uptimeNanoseconds - start)
        // A key that answered a query is in use: it leaves the probationary part of the store.
        if let user = query.storedKeyUser { keys.confirmUse(user: user, configHash: query.useCase.evaluationKeyConfigHash) }
        // One reply per queried index (cuckoo table), holding that entry's chunk ciphertexts.
        let perIndex = server.parameters.plaintextsPerEntry
        var response = ProtoResponse()
        response.pirResponse.replies = stride(from: 0, to: answer.ciphertexts.count, by: perIndex).map { start in
            var reply = ProtoSerializedCiphertextVec()
            reply.ciphertexts = answer.ciphertexts[start..<(start + perIndex)].map { query.useCase.context.serialize($0, forDecryption: true).proto }
            return reply
        }
        return .success(response)
    }

    /// The /queries answer for responses in request order.
    public func serialize(_ responses: [ProtoResponse]) -> [UInt8] {
        var message = ProtoResponses()
        message.responses = responses
        return serialize(message)
    }

    private func serialize(_ message: some SwiftProtobuf.Message) -> [UInt8] {
        (try? message.serializedBytes()) ?? []
    }
}
