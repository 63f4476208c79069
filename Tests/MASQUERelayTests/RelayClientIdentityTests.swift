import Foundation
import Glibc
import HTTPServing
import Logging
import MASQUERelay
import NetExtCore
import NetExtTestSupport
import NIOSSL
import Testing
@testable import RelayProvider

/// Client certificates (`NERelay.identityData`): a relay asking for them (`--client-ca`)
/// admits a client presenting one of its CA's, with no token, and fails every other handshake;
/// the identity's PEM is read and checked; the provider takes the identities netextd hands over.
@Suite("MASQUE relay: client certificates (mutual TLS)", .serialized)
struct RelayClientIdentityTests {
    static func identity(_ certificates: TestCertificates) throws -> RelayClientIdentity {
        try RelayClientIdentity(pem: try String(contentsOfFile: certificates.clientIdentityFile, encoding: .utf8))
    }

    @Test("a relay with a client CA: a client with its certificate is admitted without a token and carries a flow; without one, or with python3-h2's bare TLS, the handshake fails")
    func mutualTLS() async throws {
        try await withCleanup(try await TestCertificates.make(), cleanup: { $0.remove() }) { certificates in
            try await certificates.issueClient()
            let echo = try RelayServerTests.EchoServers()
            defer { echo.stop() }
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            // Tokens are asked too: the certificate alone admits.
            let policy = RelayPolicy(allowedTargets: [try IPPrefix("127.0.0.0/8")], bearerTokens: ["unused-token"])
            let relay = try await RelayServer.start(
                host: "127.0.0.1", port: 0, tls: tls, policy: policy, clientCAFile: certificates.caFile, logger: .init(label: "test") { _ in SwiftLogNoOpLogHandler() })
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            do {
                let client = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, identity: try Self.identity(certificates))
                let pair = try RelayClientTests.connectedPair()
                defer { close(pair.app) }
                try await client.carry(socket: pair.flow, toHost: "127.0.0.1", port: echo.tcpPort)
                let message = Array("with a certificate".utf8)
                _ = send(pair.app, message, message.count, 0)
                #expect(try await RelayClientTests.receive(pair.app, count: message.count) == message)
                await client.close()
                #expect(relay.counters.current.tcpStreams == 1 && relay.counters.current.unauthorized == 0)

                await #expect(throws: (any Error).self) { try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots) }
                let bare = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)", "--token", "unused-token"])
                #expect(bare["status"] == nil, "\(bare)")
            } catch {
                await relay.stop()
                throw error
            }
            await relay.stop()
        }
    }

    @Test("identity PEM: a certificate and its key pass; no certificate, no key, or another's key are refused, saying which")
    func identityPEM() async throws {
        try await withCleanup(try await TestCertificates.make(), cleanup: { $0.remove() }) { certificates in
            try await certificates.issueClient()
            let certificate = try String(contentsOfFile: certificates.clientCertificateFile, encoding: .utf8)
            let key = try String(contentsOfFile: certificates.clientKeyFile, encoding: .utf8)
            let identity = try RelayClientIdentity(pem: key + certificate)
            #expect(identity.chain.count == 1)
            func refusal(_ pem: String) -> String {
                do { _ = try RelayClientIdentity(pem: pem); return "accepted" } catch { return error.description }
            }
            #expect(refusal(key).contains("no PEM certificate"))
            #expect(refusal(certificate).contains("no PEM private key"))
            let otherKey = try String(contentsOfFile: certificates.keyFile, encoding: .utf8)
            #expect(refusal(certificate + otherKey).contains("does not belong to its first certificate"))
        }
    }

    @Test("the provider takes each relay's identity from the start options; a relay that names one without it, or with a bad one, fails the start naming it")
    func providerIdentities() async throws {
        try await withCleanup(try await TestCertificates.make(), cleanup: { $0.remove() }) { certificates in
            try await certificates.issueClient()
            let pem = try String(contentsOfFile: certificates.clientIdentityFile, encoding: .utf8)
            let settings = RelayProtocol(relays: [
                RelayHop(http2RelayURL: "https://a.example"),
                RelayHop(http2RelayURL: "https://b.example", identityReference: "/etc/netext/relay-client.pem"),
            ])
            let option = RelayProxyProvider.identitiesOption
            let taken = try RelayProxyProvider.identities(from: [option: .object(["1": .string(pem)])], settings: settings)
            #expect(taken.keys.sorted() == [1])
            func refusal(_ options: [String: JSONValue]) -> String {
                do throws(NetExtError) { _ = try RelayProxyProvider.identities(from: options, settings: settings); return "accepted" } catch { return error.message }
            }
            #expect(refusal([:]).contains("relays[1].identityReference: netextd handed over no client identity"))
            #expect(refusal([option: .object(["1": .string("not pem")])]).contains("relays[1].identityReference: the client identity is not usable"))
        }
    }
}
