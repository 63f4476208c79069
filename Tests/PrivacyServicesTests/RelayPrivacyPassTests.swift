import Foundation
import Glibc
import HTTPServing
import Logging
import MASQUERelay
import NetExtCore
import NetExtTestSupport
import NIOSSL
import PrivacyPass
import Testing
@testable import PrivacyServices
@testable import URLFilter

/// Privacy Pass tokens (RFC 9577) as the MASQUE relay's credential, from NetExt's issuer: the
/// relay answers 407 with a `PrivateToken` challenge, a token redeemed on a connection admits
/// every stream of it, and the same token on another connection is refused as spent. The flows'
/// target is the issuer's own HTTP port on loopback (any listening port would do: only the
/// CONNECT's answer is looked at).
@Suite("Privacy Pass at the MASQUE relay", .serialized)
struct RelayPrivacyPassTests {
    @Test("407 with a PrivateToken challenge; a token admits its connection (two flows, one token spent); the same token on a new connection is refused")
    func tokensAdmitConnections() async throws {
        let issuer = try await IssuerTests.Issuer.start()
        defer { Task { await issuer.stop() } }
        let verifier = try OriginTests.verifier(issuer: issuer, storePath: nil, origin: "relay.test")
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
        let policy = RelayPolicy(allowedTargets: [try IPPrefix("127.0.0.0/8")], privateTokens: verifier)
        let relay = try await RelayServer.start(host: "127.0.0.1", port: 0, tls: tls, policy: policy, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
        let target = UInt16(issuer.served.port)
        do {
            // No credential: refused, and told which token to bring.
            let bare = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots)
            await #expect(throws: RelayClient.Failure.self) { try await Self.flow(through: bare, to: target) }
            await bare.close()
            #expect(relay.counters.current.unauthorized == 1)
            let key = try #require(verifier.keys.first)
            let challenge = TokenChallenge(issuerName: "127.0.0.1", originInfo: ["relay.test"])

            let token = try await issuer.client(store: try PrivateTokenStore(path: nil), batch: 1).token(for: challenge, tokenKeyDER: key)
            let header = [(name: "Proxy-Authorization", value: PrivateTokenHeader.authorization(token))]
            let admitted = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, additionalHeaders: header)
            // The first flow redeems the token; the second rides on the admitted connection
            // (it carries the same, now spent, token: the relay does not look at it again).
            try await Self.flow(through: admitted, to: target)
            try await Self.flow(through: admitted, to: target)
            await admitted.close()
            #expect(relay.counters.current.privateTokensRedeemed == 1)
            #expect(relay.counters.current.tcpStreams == 2)

            let replayed = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, additionalHeaders: header)
            await #expect(throws: RelayClient.Failure.self) { try await Self.flow(through: replayed, to: target) }
            await replayed.close()
            #expect(verifier.outcomes["accepted"] == 1 && verifier.outcomes["spent"] == 1)
            #expect(relay.counters.current.unauthorized == 2)
        } catch {
            await relay.stop()
            throw error
        }
        await relay.stop()
    }

    @Test("the relay's refusal carries the verifier's challenge as Proxy-Authenticate (read by python3-h2, not NetExt's code)")
    func challengeHeader() async throws {
        let issuer = try await IssuerTests.Issuer.start()
        defer { Task { await issuer.stop() } }
        let verifier = try OriginTests.verifier(issuer: issuer, storePath: nil, origin: "relay.test")
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
        let policy = RelayPolicy(allowedTargets: [try IPPrefix("127.0.0.0/8")], bearerTokens: ["lab-token"], privateTokens: verifier)
        let relay = try await RelayServer.start(host: "127.0.0.1", port: 0, tls: tls, policy: policy, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        defer { Task { await relay.stop() } }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path + "/scripts/lib/masque-client.py"
        func client(_ extra: [String]) async throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [script, "127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(issuer.served.port)"] + extra
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let data = try await offPool { output.fileHandleForReading.readDataToEndOfFile() }
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        let refused = try await client([])
        #expect(refused.contains("status=407"), "\(refused)")
        let line = try #require(refused.split(separator: "\n").first { $0.hasPrefix("proxy-authenticate=") })
        let offered = try PrivateTokenHeader.parseChallenges(String(line.dropFirst("proxy-authenticate=".count)))
        #expect(offered.first?.challenge == TokenChallenge(issuerName: "127.0.0.1", originInfo: ["relay.test"]), "\(line)")
        // A bearer token still admits a request by itself.
        let bearer = try await client(["--token", "lab-token"])
        #expect(bearer.contains("status=200"), "\(bearer)")
    }

    /// Opens one CONNECT flow through `client` to 127.0.0.1:`port`; throws the relay's refusal.
    static func flow(through client: RelayClient, to port: UInt16) async throws {
        let pair = try LoopbackSockets.connectedPair()
        defer { close(pair.near) }
        try await client.carry(socket: pair.far, toHost: "127.0.0.1", port: port)
    }
}
