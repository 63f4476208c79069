import Foundation
import HomomorphicEncryption
import PIRProtobuf
import PIRService
import PrivateInformationRetrieval
import Synchronization
import Testing
@testable import URLFilter

/// What was learnt running NetExt's client against Apple's own PIR service (pir-service-example
/// on swift-homomorphic-encryption release/1.1 and main, built on this machine; issue 19), kept
/// as recorded bytes and statuses because CI cannot reach Apple's code.
@Suite("Interoperation with Apple's PIR service")
struct AppleInteropTests {
    /// Apple's server writes the sharding function (field 4) even for the default: the keyword
    /// parameters of a 2-hash-function use case are these 6 bytes.
    static let appleKeywordParameters: [UInt8] = [0x08, 0x02, 0x22, 0x02, 0x0A, 0x00]

    func appleConfiguration(keywordParameters: [UInt8]) throws -> ProtoPIRConfig {
        var message = ProtoPIRConfig()
        message.encryptionParameters = EncryptionParameters.n4096LogQ27_28_28LogT5.proto
        message.algorithm = .mulPir
        message.batchSize = 2
        var shard = ProtoPIRShardConfig()
        shard.numEntries = 100
        shard.entrySize = 89
        shard.dimensions = [5, 1]
        message.shardConfigs = [shard, shard]
        message.keywordPirParams = try ProtoKeywordPirParameters(serializedBytes: keywordParameters)
        return message
    }

    @Test("a configuration naming SHA-256 sharding, as Apple's always does, is read")
    func appleShardingFieldIsRead() throws {
        let configuration = try KeywordPirConfiguration(proto: try appleConfiguration(keywordParameters: Self.appleKeywordParameters))
        #expect(configuration.keywordParameters.shardingFunction == .sha256)
        #expect(configuration.keywordParameters.hashFunctionCount == 2)
        #expect(configuration.shards.count == 2)
    }

    @Test("double-mod sharding (field 4, case 2) is read and used for the shard")
    func doubleModShardingIsRead() throws {
        // Field 4 (4 bytes): case double_mod (field 2, 2 bytes): other_shard_count = 7.
        let bytes: [UInt8] = [0x08, 0x02, 0x22, 0x04, 0x12, 0x02, 0x08, 0x07]
        let configuration = try KeywordPirConfiguration(proto: try appleConfiguration(keywordParameters: bytes))
        #expect(configuration.keywordParameters.shardingFunction == .doubleMod(otherShardCount: 7))
        let hash = KeywordHash(keyword: "abc")
        #expect(configuration.keywordParameters.shard(of: hash) == Int((hash.keywordHash % 7) % 2))
        // other_shard_count 0 would divide by zero: refused.
        #expect(throws: PirError.self) {
            try KeywordPirConfiguration(proto: try appleConfiguration(keywordParameters: [0x08, 0x02, 0x22, 0x02, 0x12, 0x00]))
        }
    }

    @Test("NetExt's server writes the sharding function as Apple's does, and its clients read it back")
    func netextWritesApplesBytes() throws {
        #expect(try ShardingFunction.sha256.proto.serializedBytes() as [UInt8] == [0x0A, 0x00])
        let parameters = try KeywordPirParameters(hashFunctionCount: 2, bucketCapacity: 8, valueSize: 1, shardCount: 1)
        let index = try IndexPirParameters(entryCount: 100, entrySize: 89, dimensions: [5, 1], batchSize: 2, degree: 4096, plaintextModulus: 17)
        let configuration = KeywordPirConfiguration(
            encryptionParameters: .n4096LogQ27_28_28LogT5, keywordParameters: parameters,
            shards: [KeywordPirShardConfiguration(bucketCount: 100, indexParameters: index)])
        let written: [UInt8] = try configuration.proto.keywordPirParams.serializedBytes()
        #expect(written.starts(with: Self.appleKeywordParameters))
        #expect(try KeywordPirConfiguration(proto: configuration.proto).keywordParameters == parameters)
    }

    @Test("refusals that ask for a new set-up are recognised in each server's words")
    func refusalsAreClassified() {
        // Apple main: protobuf Error bodies.
        #expect(PIRServerRefusal(status: 400, body: [0x12, 0x00]) == .evaluationKeyNotFound)
        #expect(PIRServerRefusal(status: 410, body: [0x0A, 0x00]) == .configurationGone)
        #expect(PIRServerRefusal(status: 400, body: [0x0A, 0x00]) == .configurationGone)
        #expect(PIRServerRefusal(status: 400, body: [0x1A, 0x00]) == .other, "invalid_request")
        #expect(PIRServerRefusal(status: 400, body: [0x22, 0x00]) == .other, "internal_error")
        // Apple release/1.1: text.
        #expect(PIRServerRefusal(status: 400, body: Array("Evaluation key not found".utf8)) == .evaluationKeyNotFound)
        // NetExt before this change.
        #expect(PIRServerRefusal(status: 409, body: Array("no evaluation key stored".utf8)) == .evaluationKeyNotFound)
        // Everything else is an error to report.
        #expect(PIRServerRefusal(status: 400, body: Array("malformed request: shard 9 of 2".utf8)) == .other)
        #expect(PIRServerRefusal(status: 400, body: Array("Missing 'User-Agent' header".utf8)) == .other)
        #expect(PIRServerRefusal(status: 500, body: [0x12, 0x00]) == .other)
        #expect(PIRServerRefusal(status: 400, body: []) == .other)
    }

    @Test("every request names a platform Apple's server reads, new enough for what this client understands")
    func userAgentIsWhatApplesServerParses() throws {
        let request = ServiceRequest(method: "POST", url: URL(string: "https://pir.example/queries")!)
        let agent = try #require(request.headers.first { $0.name == "User-Agent" }?.value)
        // Apple's Platform(userAgent:) matches `^.*iOS/(\d+)\.(\d+)\.?(\d)?.*` (whole match).
        let match = try #require(agent.wholeMatch(of: #/^.*iOS/(\d+)\.(\d+)\.?(\d)?.*/#))
        let version = (Int(match.output.1)!, Int(match.output.2)!)
        #expect(version >= (18, 2), "fixed shard configurations and double-mod sharding need iOS 18.2 or later")
        let named = ServiceRequest(method: "GET", url: URL(string: "https://pir.example/")!, headers: [("user-agent", "other/1")])
        #expect(named.headers.filter { $0.name.lowercased() == "user-agent" }.map(\.value) == ["other/1"])
    }

    /// A transport that sends the first query under a user the server has no key for, as a
    /// server that lost its keys (a restart, an eviction) sees it.
    final class ForgetfulServer: ServiceTransport {
        let inner: DirectTransport
        let answers = Mutex<[(path: String, status: Int, body: [UInt8])]>([])
        let forgot = Mutex(false)
        init(inner: DirectTransport) { self.inner = inner }

        func send(_ request: ServiceRequest) async throws(URLFilterError) -> ServiceResponse {
            var request = request
            if request.url.path == "/queries", forgot.withLock({ let first = !$0; $0 = true; return first }) {
                request.headers = request.headers.map { $0.name == "User-Identifier" ? ($0.name, "someone-else") : $0 }
            }
            let answer = try await inner.send(request)
            answers.withLock { $0.append((request.url.path, answer.status, answer.body)) }
            return answer
        }
    }

    @Test("NetExt's server answers a query without a stored key as Apple's does (400, Error 12 00), and the client sets up again")
    func missingKeyIsAnsweredAsAppleDoesAndRecovered() async throws {
        let served = try await ServedDatabase.start(urls: (0..<500).map { "https://www.site\($0).example/" }, logs: LogCollector())
        try await served.use { served in
            let transport = ForgetfulServer(inner: DirectTransport(timeout: testClientTimeout))
            let client = PIRHTTPClient(server: served.url, useCase: ServedDatabase.useCase, transport: transport)
            #expect(try await client.check(["https://www.site3.example/"]) == [.deny])
            let answers = transport.answers.withLock { $0 }
            #expect(answers.map(\.path) == ["/config", "/key", "/queries", "/config", "/key", "/queries"])
            let refused = try #require(answers.first { $0.path == "/queries" })
            #expect(refused.status == 400)
            #expect(refused.body == [0x12, 0x00])
            #expect(answers.last?.status == 200)
        }
    }
}
