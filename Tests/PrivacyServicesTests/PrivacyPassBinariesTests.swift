import Foundation
import HTTPServing
import NetExtTestSupport
import PrivacyPass
import Synchronization
import Testing
@testable import PrivacyServices
@testable import URLFilter
#if canImport(Glibc)
import Glibc
#endif

/// Issue 26, items 1 and 4, at the issue's sizes (every hop over TLS) against the real `netext-server issuer` and
/// `netext-server pir --privacy-pass-issuer` processes of this build: 11 spent tokens stay spent
/// through an issuer directory that answers with no key (the origin used to drop its table,
/// 11 → 0 rows, and take them again), and one client's 16-token issuance replayed 50 times is
/// signed and charged once.
@Suite("Privacy Pass against the server binaries (issue 26, items 1 and 4)", .enabled(if: ServerProcess.binariesBuilt, "needs the built netext-server"))
struct PrivacyPassBinariesTests {
    /// Directory answers the test scripts: the real issuer's, or one listing no key.
    final class SwitchableDirectory: HTTPResponder, @unchecked Sendable {
        struct State { var real: [UInt8] = []; var empty = false; var fetches = 0 }
        let state = Mutex(State())
        func bodyLimit(method: String, path: String) -> Int { 0 }
        func endpointLabel(path: String) -> String { "directory" }
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
            let body = state.withLock { state -> [UInt8] in
                state.fetches += 1
                guard state.empty else { return state.real }
                return [UInt8](try! JSONEncoder().encode(IssuerDirectory(issuerRequestURI: "/issue", tokenKeys: [])))
            }
            return HTTPServerResponse(status: 200, contentType: IssuerDirectory.mediaType, body: body)
        }
        /// Calls `poke` (a request to the origin: it fetches the directory when a request comes
        /// and a fetch is due) until the origin has fetched `count` more times; at most 600
        /// times, 100 ms apart.
        func awaitFetches(_ count: Int, poke: () async throws -> Void) async throws -> Bool {
            let target = state.withLock { $0.fetches } + count
            for _ in 0..<600 {
                if state.withLock({ $0.fetches }) >= target { return true }
                try await poke()
                try await Task.sleep(for: .milliseconds(100))
            }
            return false
        }
    }

    /// Prints one `privacy_pass_NAME=STATUSxCOUNT,...` line: `scripts/attack` runs this suite
    /// against release binaries and collects these lines as its figures for items 1 and 4.
    static func report(_ name: String, _ statuses: [Int: Int]) {
        print("privacy_pass_\(name)=" + statuses.sorted { $0.key < $1.key }.map { "\($0.key)x\($0.value)" }.joined(separator: ","))
    }

    static let victim = "credential-victim-0123456789"
    static let other = "credential-other-0123456789a"

    @Test func spentTokensSurviveAnEmptyDirectoryAndReplayedIssuanceIsChargedOnce() async throws {
        let work = TemporaryDirectory()
        defer { work.remove() }
        // Every hop is TLS under a private CA: the issuer and the origin serve it, the origin
        // fetches the directory over it (`--upstream-ca`), the test's client trusts that CA.
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let serveTLS = ["--tls-certificate", certificates.certificateFile, "--tls-key", certificates.keyFile]
        try "\(Self.victim)\n\(Self.other)\n".write(toFile: work.path + "/credentials", atomically: true, encoding: .utf8)
        try "https://blocked.example/\nhttps://ads.example/x\n".write(toFile: work.path + "/urls.txt", atomically: true, encoding: .utf8)
        let built = try await ServerProcess.runToEnd("netext-urlfilter-db", [
            "build", "--urls", work.path + "/urls.txt", "--false-positive-rate", "0.01", "--use-case", "com.example.test", "--output", work.path + "/db",
        ])
        #expect(built.status == 0, "\(built.output)")

        // Burst 30 per credential, and (practically) no refill during the test.
        let issuer = try await ServerProcess.start("netext-server", [
            "issuer", "--listen", "127.0.0.1:0", "--keys", work.path + "/issuer-keys", "--credentials", work.path + "/credentials",
            "--rate-per-hour", "0.001", "--burst", "30",
        ] + serveTLS, log: work.path + "/issuer.log")
        defer { issuer.kill() }
        let issuerURL = URL(string: "https://127.0.0.1:\(issuer.port)")!
        let transport = DirectTransport(timeout: testClientTimeout, tls: try ClientTLS(caFile: certificates.caFile))
        let realDirectory = try await transport.send(ServiceRequest(method: "GET", url: issuerURL.appendingPathComponent(String(IssuerDirectory.wellKnownPath.dropFirst()))))
        #expect(realDirectory.status == 200)
        let directory = SwitchableDirectory()
        directory.state.withLock { $0.real = realDirectory.body }
        try await Served.start(directory, tls: try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)).use { served in
            let origin = try await ServerProcess.start("netext-server", [
                "pir", "--database", work.path + "/db", "--listen", "127.0.0.1:0", "--threads", "1",
                "--privacy-pass-issuer", served.base, "--upstream-ca", certificates.caFile, "--origin-name", "pir.test", "--directory-refresh-seconds", "1",
            ] + serveTLS, log: work.path + "/pir.log")
            defer { origin.kill() }
            #expect(origin.servesTLS && issuer.servesTLS, "a server did not log tls=on")
            let originURL = URL(string: "https://127.0.0.1:\(origin.port)/config")!
            func post(_ token: PrivateToken?) async throws -> Int {
                var headers: [(name: String, value: String)] = [("User-Identifier", "u1"), ("Content-Type", "application/x-protobuf")]
                if let token { headers.append(("Authorization", PrivateTokenHeader.authorization(token))) }
                return try await transport.send(ServiceRequest(method: "POST", url: originURL, headers: headers, body: [])).status
            }

            // Item 1: eleven tokens, each spent once; a second use is refused.
            let key = try #require(try JSONDecoder().decode(IssuerDirectory.self, from: Data(realDirectory.body)).tokenKeys.first?.publicKeyDER)
            let challenge = TokenChallenge(issuerName: "127.0.0.1", originInfo: ["pir.test"])
            let client = PrivacyPassClient(issuerURL: issuerURL, credential: Self.victim, transport: transport, store: try PrivateTokenStore(path: nil), batchSize: 12)
            var tokens: [PrivateToken] = []
            for _ in 0..<12 { tokens.append(try await client.token(for: challenge, tokenKeyDER: key)) }
            #expect(try await post(nil) == 401)
            for token in tokens.prefix(11) {
                let status = try await post(token)
                #expect(status == 200, "a fresh token was refused: \(status)")
                #expect(try await post(token) == 401)
            }
            // The directory lists no key for a while, then the key again; the origin fetches it at
            // most each second, when a request comes (here: spent tokens, refused).
            let poke = { _ = try await post(tokens[0]) }
            directory.state.withLock { $0.empty = true }
            #expect(try await directory.awaitFetches(2, poke: poke), "the origin did not fetch the directory")
            directory.state.withLock { $0.empty = false }
            #expect(try await directory.awaitFetches(2, poke: poke))
            var spentStatuses: [Int: Int] = [:]
            for token in tokens.prefix(11) { spentStatuses[try await post(token), default: 0] += 1 }
            #expect(spentStatuses == [401: 11], "a spent token was accepted again after an empty directory: \(spentStatuses)")
            let fresh = try await post(tokens[11])
            #expect(fresh == 200, "the origin no longer takes fresh tokens")
            #expect(try await post(tokens[11]) == 401)
            Self.report("spent_tokens_after_empty_directory", spentStatuses)
            Self.report("fresh_token_after_empty_directory", [fresh: 1])

            // Item 4: one 16-token issuance of the other credential, replayed 50 times (as an
            // on-path relay could): signed once, charged once.
            func issue(_ body: [UInt8]) async throws -> Int {
                try await transport.send(ServiceRequest(method: "POST", url: issuerURL.appendingPathComponent("issue"), headers: [
                    ("Content-Type", IssuerResponder.requestMediaType), ("Authorization", "Bearer \(Self.other)"),
                ], body: body)).status
            }
            var batch: [UInt8] = []
            for _ in 0..<16 { batch += try BlindRSAIssuance.makeRequest(challenge: challenge, issuerKeyDER: key).0.encoded() }
            let first = try await issue(batch)
            #expect(first == 200)
            var replayStatuses: [Int: Int] = [:]
            for _ in 0..<50 { replayStatuses[try await issue(batch), default: 0] += 1 }
            #expect(replayStatuses == [409: 50], "\(replayStatuses)")
            // 30 − 16 = 14 tokens left for that credential: 14 more are signed, the next one is not.
            var rest: [UInt8] = []
            for _ in 0..<14 { rest += try BlindRSAIssuance.makeRequest(challenge: challenge, issuerKeyDER: key).0.encoded() }
            let fourteen = try await issue(rest)
            #expect(fourteen == 200)
            let fifteenth = try await issue(try BlindRSAIssuance.makeRequest(challenge: challenge, issuerKeyDER: key).0.encoded())
            #expect(fifteenth == 429)
            Self.report("issuance_16_tokens_first", [first: 1])
            Self.report("issuance_16_tokens_replayed_50_times", replayStatuses)
            Self.report("burst_30_after_replays_14_tokens", [fourteen: 1])
            Self.report("burst_30_after_replays_15th_token", [fifteenth: 1])
        }
    }
}

/// A server binary of this build, started on loopback with a kernel-chosen port (read from its
/// "serving" log line), killed by `kill()`.
struct ServerProcess {
    let process: Process
    let port: Int
    /// Whether its "serving" line says `tls=on`.
    var servesTLS = false

    static let binaryDirectory = BuiltBinaries.directory
    static var binariesBuilt: Bool { FileManager.default.isExecutableFile(atPath: binaryDirectory + "/netext-server") }

    static func start(_ binary: String, _ arguments: [String], log: String) async throws -> ServerProcess {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binaryDirectory + "/" + binary)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // The bound port, from the log (at most 150 s: CI's first minute is slow).
        for _ in 0..<1500 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"listen=127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
               let port = Int(text[range].split(separator: ":").last ?? "") {
                return ServerProcess(process: process, port: port, servesTLS: text.contains("tls=on"))
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        throw ServerProcessError(description: "\(binary) \(arguments.first ?? "") did not start; log:\n\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// Runs a tool of this build to its end (at most 120 s), off the task pool.
    static func runToEnd(_ binary: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await offPool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binaryDirectory + "/" + binary)
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            waitForExit(process, seconds: 30)
            return (process.terminationStatus, String(decoding: output, as: UTF8.self))
        }
    }

    func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        waitForExit(process, seconds: 10)
    }
}

struct ServerProcessError: Error, CustomStringConvertible {
    let description: String
}
