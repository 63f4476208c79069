import BloomFilter
import Foundation
import HomomorphicEncryption
import PIRProtobuf
import PrivateInformationRetrieval
import SwiftProtobuf

/// Whether a URL may load.
public enum URLFilterVerdict: String, Sendable, Codable {
    case allow
    case deny
    /// No decision was possible (the PIR service unreachable or refusing); the filter then
    /// allows or denies as `shouldFailClosed` says, and reports this where asked.
    case unknown
}

/// Talks to a PIR service (`POST /config`, `/key`, `/queries`) for one use case: fetches the
/// configuration, uploads an evaluation key under a random pseudonymous user identifier, and
/// checks URLs by asking for each of their keys privately. Requests go through a
/// `ServiceTransport`: directly, or through an Oblivious HTTP relay with Privacy Pass tokens. Keys the prefilter rules out are
/// not asked for, as the system does.
public actor PIRHTTPClient {
    public let server: URL
    public let useCase: String
    /// A random identifier, not linked to anything else about the client.
    public let userIdentifier: String
    let transport: any ServiceTransport
    /// Sees every request body this client sends (path, bytes): for audits and tests of what
    /// the server learns.
    let observer: (@Sendable (String, [UInt8]) -> Void)?
    var state: (
        configuration: KeywordPirConfiguration, configID: [UInt8], keyIdentifier: [UInt8], context: BFVContext,
        client: KeywordPirClient<BFVContext>, secretKey: SecretKey
    )?

    public init(
        server: URL, useCase: String, userIdentifier: String = UUID().uuidString, transport: any ServiceTransport = DirectTransport(),
        observer: (@Sendable (String, [UInt8]) -> Void)? = nil
    ) {
        self.server = server
        self.useCase = useCase
        self.userIdentifier = userIdentifier
        self.transport = transport
        self.observer = observer
    }

    func post(_ path: String, _ body: [UInt8]) async throws(URLFilterError) -> [UInt8] {
        observer?(path, body)
        let request = ServiceRequest(
            method: "POST", url: server.appendingPathComponent(String(path.dropFirst())),
            headers: [("Content-Type", "application/x-protobuf"), ("User-Identifier", userIdentifier)], body: body)
        let answer = try await transport.send(request)
        guard answer.status == 200 else {
            let refusal = PIRServerRefusal(status: answer.status, body: answer.body)
            if refusal.asksToSetUpAgain { throw .staleSetup(refusal) }
            throw .server(status: answer.status, message: answer.message)
        }
        return answer.body
    }

    /// Fetches the configuration and uploads a fresh evaluation key (once per client).
    public func setUp() async throws(URLFilterError) {
        if state != nil { return }
        var configRequest = ProtoConfigRequest()
        configRequest.usecases = [useCase]
        let answer: ProtoConfigResponse
        do { answer = try ProtoConfigResponse(serializedBytes: try await post("/config", try configRequest.serializedBytes())) } catch let error as URLFilterError {
            throw error
        } catch { throw .protocolMismatch("ConfigResponse: \(error)") }
        guard let config = answer.configs[useCase], case .pirConfig = config.config else {
            throw .protocolMismatch("no configuration for '\(useCase)'")
        }
        let configuration: KeywordPirConfiguration
        let context: BFVContext
        let client: KeywordPirClient<BFVContext>
        do {
            configuration = try KeywordPirConfiguration(proto: config.pirConfig)
            context = try BFVContext(parameters: configuration.encryptionParameters)
            client = try KeywordPirClient(scheme: context, parameters: configuration.keywordParameters, shards: configuration.shards)
        } catch { throw .protocolMismatch("configuration: \(error)") }
        // The config id is the server's opaque name for this configuration (echoed in queries).
        // The key is identified and shaped as the server says when it says so (an Apple-style
        // server may ask for other Galois elements than NetExt's expansion uses); otherwise as
        // NetExt derives it from the shards.
        let keyIdentifier = config.pirConfig.evaluationKeyConfigHash.isEmpty
            ? configuration.evaluationKeyConfigHash : Array(config.pirConfig.evaluationKeyConfigHash)
        let requested = answer.keyInfo.first { $0.keyConfig.sha256 == keyIdentifier }
        let secretKey = context.generateSecretKey()
        let evaluationKey: EvaluationKey
        do {
            if let requested {
                let elements = requested.keyConfig.galoisElements.map { Int($0) }
                evaluationKey = try context.generateEvaluationKey(
                    galoisElements: elements, relinearization: requested.keyConfig.hasRelinKey_p, secretKey: secretKey)
            } else {
                evaluationKey = try client.generateEvaluationKey(secretKey: secretKey)
            }
        } catch { throw .protocolMismatch("evaluation key: \(error)") }
        var upload = ProtoEvaluationKeys()
        var key = ProtoEvaluationKey()
        key.metadata.identifier = Data(keyIdentifier)
        key.metadata.timestamp = UInt64(Date().timeIntervalSince1970)
        key.evaluationKey = context.serialize(evaluationKey).proto
        upload.keys = [key]
        do { _ = try await post("/key", try upload.serializedBytes()) } catch let error as URLFilterError { throw error } catch {
            throw .protocolMismatch("\(error)")
        }
        state = (configuration, Array(config.configID), keyIdentifier, context, client, secretKey)
    }

    /// The verdict for each URL: deny when any of its keys is in the database. When the server
    /// says its configuration changed or that it no longer holds this client's evaluation key
    /// (`PIRServerRefusal`), the configuration is fetched and a key uploaded again, and the URLs
    /// asked once more.
    public func check(_ urls: [String], prefilter: BloomFilter? = nil) async throws(URLFilterError) -> [URLFilterVerdict] {
        do { return try await checkOnce(urls, prefilter: prefilter) } catch {
            guard case .staleSetup = error else { throw error }
            state = nil
            return try await checkOnce(urls, prefilter: prefilter)
        }
    }

    func checkOnce(_ urls: [String], prefilter: BloomFilter?) async throws(URLFilterError) -> [URLFilterVerdict] {
        try await setUp()
        guard let state else { throw .protocolMismatch("not set up") }
        var verdicts: [URLFilterVerdict] = []
        for url in urls {
            let keys = try URLFilterKey(parsing: url).checkedKeys.filter { prefilter?.contains($0) ?? true }
            var denied = false
            for batch in stride(from: 0, to: keys.count, by: 16).map({ Array(keys[$0..<min(keys.count, $0 + 16)]) }) where !denied {
                var requests = ProtoRequests()
                var queries: [KeywordPirQuery<BFVContext>] = []
                for key in batch {
                    let query: KeywordPirQuery<BFVContext>
                    do { query = try state.client.generateQuery(keyword: Array(key.utf8), secretKey: state.secretKey) } catch {
                        throw .protocolMismatch("\(error)")
                    }
                    queries.append(query)
                    var request = ProtoRequest()
                    request.usecase = useCase
                    request.pirRequest.shardIndex = UInt32(query.shard)
                    request.pirRequest.query.ciphertexts = query.query.ciphertexts.map { state.context.serialize($0).proto }
                    request.pirRequest.query.numPirCalls = UInt64(state.configuration.keywordParameters.hashFunctionCount)
                    request.pirRequest.evaluationKeyMetadata.identifier = Data(state.keyIdentifier)
                    request.pirRequest.configurationHash = Data(state.configID)
                    requests.requests.append(request)
                }
                let responses: ProtoResponses
                do { responses = try ProtoResponses(serializedBytes: try await post("/queries", try requests.serializedBytes())) } catch let error as URLFilterError {
                    throw error
                } catch { throw .protocolMismatch("Responses: \(error)") }
                guard responses.responses.count == queries.count else {
                    throw .protocolMismatch("\(responses.responses.count) responses to \(queries.count) requests")
                }
                for (response, query) in zip(responses.responses, queries) {
                    do {
                        // replies[i]: the chunk ciphertexts of cuckoo table i's bucket.
                        let ciphertexts = try response.pirResponse.replies.flatMap(\.ciphertexts).map {
                            try state.context.deserialize(try SerializedCiphertext(proto: $0))
                        }
                        if try state.client.decrypt(IndexPirResponse(ciphertexts: ciphertexts), for: query, secretKey: state.secretKey) != nil {
                            denied = true
                        }
                    } catch { throw .protocolMismatch("response: \(error)") }
                }
            }
            verdicts.append(denied ? .deny : .allow)
        }
        return verdicts
    }
}
