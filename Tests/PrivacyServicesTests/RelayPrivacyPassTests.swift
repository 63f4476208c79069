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

    @Test("tokens fetched from the issuer when the relay asks (PrivacyPassRelayTokens): the first request answered 407 is sent again with a fresh token; each new connection presents one from its first request; flows at once spend one")
    func tokensFetchedWhenTheRelayAsks() async throws {
        try await Self.withTokenRelay { relay, issuer, verifier, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            let target = UInt16(issuer.served.port)
            let tokens = PrivacyPassRelayTokens(issuerURL: issuer.served.url(""), credential: IssuerTests.credential, batchSize: 3, timeout: testClientTimeout)
            let first = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, tokens: tokens)
            try await Self.flow(through: first, to: target)
            try await Self.flow(through: first, to: target)
            await first.close()
            #expect(relay.counters.current.unauthorized == 1, "only the first request, before the challenge was known")
            #expect(relay.counters.current.privateTokensRedeemed == 1)
            #expect(await tokens.fetchedTokens == 3, "one batch")

            // Later connections: a token from the first request, no 407; four flows at once on
            // one connection still spend one token.
            for round in 0..<3 {
                let client = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, tokens: tokens)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 { group.addTask { try await Self.flow(through: client, to: target) } }
                    try await group.waitForAll()
                }
                await client.close()
                #expect(relay.counters.current.privateTokensRedeemed == 2 + round)
            }
            #expect(relay.counters.current.unauthorized == 1)
            #expect(relay.counters.current.tcpStreams == 14)
            #expect(await tokens.fetchedTokens == 6, "a second batch once the first three were spent")
            #expect(verifier.outcomes["accepted"] == 4 && verifier.outcomes["spent"] == nil, "\(verifier.outcomes)")
        }
    }

    @Test("no token to be had: an issuer refusing the credential fails the flow saying so (and the next one tries again); a challenge of another issuer is not answered (the 407 stands)")
    func tokensThatCannotBeHad() async throws {
        try await Self.withTokenRelay { relay, issuer, _, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            let target = UInt16(issuer.served.port)
            let refusing = PrivacyPassRelayTokens(issuerURL: issuer.served.url(""), credential: "credential-wrong-wrong-wrong", timeout: testClientTimeout)
            let client = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, tokens: refusing)
            for _ in 0..<2 {
                do {
                    try await Self.flow(through: client, to: target)
                    Issue.record("a flow was carried without a token")
                } catch let failure as RelayClient.Failure {
                    #expect(failure.status == nil && failure.description.contains("asks for a Privacy Pass token and none could be had"), "\(failure)")
                    #expect(failure.description.contains("401"), "the issuer's refusal is said: \(failure)")
                }
            }
            await client.close()
            // The second flow knew the challenge, asked the issuer again and failed before
            // troubling the relay.
            #expect(relay.counters.current.unauthorized == 1)
            #expect(await refusing.fetchedTokens == 0)

            // The relay's challenge names issuer 127.0.0.1; a source for "localhost" does not answer it.
            let elsewhere = PrivacyPassRelayTokens(
                issuerURL: URL(string: "http://localhost:\(issuer.served.port)")!, credential: IssuerTests.credential, timeout: testClientTimeout)
            let other = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, tokens: elsewhere)
            do {
                try await Self.flow(through: other, to: target)
                Issue.record("a flow was carried without a token")
            } catch let failure as RelayClient.Failure {
                #expect(failure.status == 407 && failure.challenges.contains { $0.hasPrefix("PrivateToken ") }, "\(failure)")
            }
            await other.close()
            #expect(await elsewhere.fetchedTokens == 0)
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
