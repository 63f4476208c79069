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
    /// A relay on loopback taking Privacy Pass tokens of a running issuer (for origin
    /// `relay.test`), and bearer `tokens`; stopped after `body`.
    static func withTokenRelay(
        bearerTokens: [String] = [], _ body: (RelayServer, IssuerTests.Issuer, PrivateTokenVerifier, TestCertificates) async throws -> Void
    ) async throws {
        let issuer = try await IssuerTests.Issuer.start()
        defer { Task { await issuer.stop() } }
        let verifier = try OriginTests.verifier(issuer: issuer, storePath: nil, origin: "relay.test")
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
        let policy = RelayPolicy(allowedTargets: [try IPPrefix("127.0.0.0/8")], bearerTokens: bearerTokens, privateTokens: verifier)
        let relay = try await RelayServer.start(host: "127.0.0.1", port: 0, tls: tls, policy: policy, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        do { try await body(relay, issuer, verifier, certificates) } catch {
            await relay.stop()
            throw error
        }
        await relay.stop()
    }

    @Test("407 with a PrivateToken challenge; a token admits its connection (two flows, one token spent); the same token on a new connection is refused")
    func tokensAdmitConnections() async throws {
        try await Self.withTokenRelay { relay, issuer, verifier, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            let target = UInt16(issuer.served.port)
            let header = try await Self.tokenHeader(relay: relay, issuer: issuer, verifier: verifier, roots: roots)
            let admitted = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, additionalHeaders: header)
            // The first flow redeems the token; the second rides on the admitted connection
            // without it (RelayAdmissionGate: a token goes on one request until admitted).
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
        }
    }

    @Test("flows opened at once on a new connection: the first alone presents the token, the others wait for its answer, then ride on the admitted connection (one token spent, none refused)")
    func concurrentFlowsSpendOneToken() async throws {
        try await Self.withTokenRelay { relay, issuer, verifier, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            let target = UInt16(issuer.served.port)
            let header = try await Self.tokenHeader(relay: relay, issuer: issuer, verifier: verifier, roots: roots)
            let client = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, additionalHeaders: header)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { try await Self.flow(through: client, to: target) } }
                try await group.waitForAll()
            }
            await client.close()
            #expect(relay.counters.current.privateTokensRedeemed == 1)
            #expect(relay.counters.current.unauthorized == 1, "the bare request only")
            #expect(relay.counters.current.tcpStreams == 4)
            #expect(verifier.outcomes["accepted"] == 1 && verifier.outcomes["spent"] == nil)
        }
    }

    @Test("the relay's refusal carries the verifier's challenge as Proxy-Authenticate (read by python3-h2, not NetExt's code)")
    func challengeHeader() async throws {
        try await Self.withTokenRelay(bearerTokens: ["lab-token"]) { relay, issuer, _, certificates in
            let arguments = ["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(issuer.served.port)"]
            let refused = try await MASQUEClientScript.run(arguments)
            #expect(refused["status"] == "407", "\(refused)")
            let offered = try PrivateTokenHeader.parseChallenges(try #require(refused["proxy-authenticate"]))
            #expect(offered.first?.challenge == TokenChallenge(issuerName: "127.0.0.1", originInfo: ["relay.test"]), "\(refused)")
            // A bearer token still admits a request by itself.
            let bearer = try await MASQUEClientScript.run(arguments + ["--token", "lab-token"])
            #expect(bearer["status"] == "200", "\(bearer)")
        }
    }

    /// A request without a credential first — refused (407), and the relay's verifier fetches the
    /// issuer's keys —, then a token for the relay's challenge from the issuer, as the header
    /// that presents it.
    static func tokenHeader(
        relay: RelayServer, issuer: IssuerTests.Issuer, verifier: PrivateTokenVerifier, roots: NIOSSLTrustRoots
    ) async throws -> [(name: String, value: String)] {
        let bare = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots)
        await #expect(throws: RelayClient.Failure.self) { try await Self.flow(through: bare, to: UInt16(issuer.served.port)) }
        await bare.close()
        #expect(relay.counters.current.unauthorized == 1)
        let key = try #require(verifier.keys.first)
        let challenge = TokenChallenge(issuerName: "127.0.0.1", originInfo: ["relay.test"])
        let token = try await issuer.client(store: try PrivateTokenStore(path: nil), batch: 1).token(for: challenge, tokenKeyDER: key)
        return [(name: "Proxy-Authorization", value: PrivateTokenHeader.authorization(token))]
    }

    /// Opens one CONNECT flow through `client` to 127.0.0.1:`port`; throws the relay's refusal.
    static func flow(through client: RelayClient, to port: UInt16) async throws {
        let pair = try LoopbackSockets.connectedPair()
        defer { close(pair.near) }
        try await client.carry(socket: pair.far, toHost: "127.0.0.1", port: port)
    }
}
