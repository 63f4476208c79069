import Foundation
import HTTPServing
import Logging
import NetExtTestSupport
import PrivacyPass
import Testing
@testable import URLFilter
@testable import PrivacyServices

/// TLS on the HTTP roles (`ServerTLS`) and on their own requests to other servers (`ClientTLS`
/// through `HTTPUpstream`), with a private CA made by openssl for each test: what is trusted
/// is served, what is not is refused with a sentence saying why, and TLS does not open a way
/// around the connection limits.
@Suite("TLS on the HTTP roles and their upstreams")
struct TLSServingTests {
    /// Runs `body` with fresh certificates, removed afterwards whether it threw or not.
    static func withCertificates<Result>(_ body: (TestCertificates) async throws -> Result) async throws -> Result {
        try await withCleanup(try await TestCertificates.make(), cleanup: { $0.remove() }, body)
    }

    /// The failure of one exchange, as the sentence a caller would log.
    static func failure(_ upstream: HTTPUpstream, _ url: String) async -> String? {
        do throws(HTTPUpstream.Failure) {
            _ = try await upstream.exchange(method: "GET", url: URL(string: url)!, headers: [], body: [])
            return nil
        } catch { return error.description }
    }

    @Test func aServerThatChainsToTheGivenCAIsReachedByAddressAndByName() async throws {
        try await Self.withCertificates { certificates in
            let target = RecordingTarget()
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(target, tls: tls).use { served in
                #expect(served.base.hasPrefix("https://"))
                let upstream = HTTPUpstream(timeout: testClientTimeout, tls: try ClientTLS(caFile: certificates.caFile))
                // By address (the certificate's IP address is checked), twice (the second on the
                // pooled connection), and by name (SNI and the certificate's DNS name).
                for base in [served.base, served.base, "https://localhost:\(served.port)"] {
                    let answer = try await upstream.exchange(method: "POST", url: URL(string: base + "/x")!, headers: [], body: [1, 2, 3])
                    #expect(answer.status == 200)
                    #expect(answer.body == [3, 2, 1])
                }
                #expect(target.requests.withLock { $0.count } == 3)
            }
        }
    }

    /// SIGHUP's certificate reload (`ServerTLS.reload()`) on a live server: a connection kept
    /// open across it goes on with the certificate it began with, and handshakes from then on
    /// present the renewal. The renewal comes from another CA, so which certificate each client
    /// met shows in whether it is trusted.
    @Test func aReloadedCertificateServesNewHandshakesWithoutDroppingKeptConnections() async throws {
        try await Self.withCertificates { certificates in
            try await certificates.issueRenewal()
            let target = RecordingTarget()
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(target, tls: tls).use { served in
                let kept = HTTPUpstream(timeout: testClientTimeout, tls: try ClientTLS(caFile: certificates.caFile))
                #expect(try await kept.exchange(method: "POST", url: served.url("/x"), headers: [], body: [1]).status == 200)
                #expect(served.server.openConnections == 1)

                try FileManager.default.removeItem(atPath: certificates.certificateFile)
                try FileManager.default.copyItem(atPath: certificates.renewedCertificateFile, toPath: certificates.certificateFile)
                try FileManager.default.removeItem(atPath: certificates.keyFile)
                try FileManager.default.copyItem(atPath: certificates.renewedKeyFile, toPath: certificates.keyFile)
                try tls.reload()

                // The kept connection (HTTP/2) still answers: it was not dropped, and a new one
                // would have met the renewal, which this client does not trust.
                #expect(try await kept.exchange(method: "POST", url: served.url("/x"), headers: [], body: [2]).status == 200)
                #expect(served.server.openConnections == 1)
                // A new handshake presents the renewal.
                let renewedTrust = HTTPUpstream(timeout: testClientTimeout, tls: try ClientTLS(caFile: certificates.otherCAFile))
                #expect(try await renewedTrust.exchange(method: "POST", url: served.url("/x"), headers: [], body: [3]).status == 200)
                let oldTrust = HTTPUpstream(timeout: testClientTimeout, tls: try ClientTLS(caFile: certificates.caFile))
                let refusal = await Self.failure(oldTrust, served.base + "/x")
                #expect(refusal?.contains("not signed by a trusted authority") == true, "\(refusal ?? "no failure")")
                #expect(target.requests.withLock { $0.map(\.body) } == [[1], [2], [3]])
            }
        }
    }

    @Test func aServerOutsideTheTrustOrNamedOtherwiseIsRefusedWithTheReason() async throws {
        try await Self.withCertificates { certificates in
            let target = RecordingTarget()
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            // 127.0.0.2 is loopback too, but not in the certificate.
            try await Served.start(target, tls: tls, host: "127.0.0.2").use { other in
                try await Served.start(target, tls: tls).use { served in
                    let stranger = HTTPUpstream(timeout: testClientTimeout, tls: try ClientTLS(caFile: certificates.otherCAFile))
                    let untrusted = await Self.failure(stranger, served.base + "/x")
                    #expect(untrusted?.contains("not signed by a trusted authority") == true, "\(untrusted ?? "answered")")
                    // The system's trust store does not know the private CA either.
                    let system = await Self.failure(HTTPUpstream(timeout: testClientTimeout), served.base + "/x")
                    #expect(system?.contains("not signed by a trusted authority") == true, "\(system ?? "answered")")
                    let trusting = HTTPUpstream(timeout: testClientTimeout, tls: try ClientTLS(caFile: certificates.caFile))
                    let misnamed = await Self.failure(trusting, other.base + "/x")
                    #expect(misnamed?.contains("not for this host") == true, "\(misnamed ?? "answered")")
                }
            }
            #expect(target.requests.withLock { $0.isEmpty }, "a request reached the target through an untrusted connection")
        }
    }

    @Test func plainHTTPAndTLSDoNotMix() async throws {
        try await Self.withCertificates { certificates in
            let target = RecordingTarget()
            let upstream = HTTPUpstream(timeout: testClientTimeout, tls: try ClientTLS(caFile: certificates.caFile))
            try await Served.start(target).use { plain in
                let answer = await Self.failure(upstream, "https://127.0.0.1:\(plain.port)/x")
                #expect(answer?.contains("does not speak TLS") == true, "\(answer ?? "answered")")
            }
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(target, tls: tls).use { secure in
                // Plain HTTP to a TLS port: no answer is taken for one.
                let answer = await Self.failure(upstream, "http://127.0.0.1:\(secure.port)/x")
                #expect(answer != nil)
            }
            #expect(target.requests.withLock { $0.isEmpty })
        }
    }

    @Test func unusableFilesAreRefusedNamingTheFile() async throws {
        try await Self.withCertificates { certificates in
            let missing = certificates.directory + "/missing.crt"
            #expect(throws: TLSSetupError.self) { try ServerTLS(certificateFile: missing, keyFile: certificates.keyFile) }
            do throws(TLSSetupError) { _ = try ServerTLS(certificateFile: missing, keyFile: certificates.keyFile) } catch {
                #expect(error.description.contains(missing), "\(error)")
            }
            do throws(TLSSetupError) { _ = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.otherKeyFile) } catch {
                #expect(error.description.contains(certificates.otherKeyFile), "\(error)")
                #expect(error.description.contains("does not match"), "\(error)")
            }
            do throws(TLSSetupError) { _ = try ClientTLS(caFile: certificates.keyFile) } catch {
                #expect(error.description.contains(certificates.keyFile), "\(error)")
            }
            #expect(throws: TLSSetupError.self) { try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.otherKeyFile) }
            #expect(throws: TLSSetupError.self) { try ClientTLS(caFile: certificates.keyFile) }
        }
    }

    @Test func aHandshakeNeverStartedIsHeldToTheRequestDeadlineAndTheCaps() async throws {
        try await Self.withCertificates { certificates in
            var limits = HTTPServerLimits()
            // A 3 s deadline and 2.5 s for the third connection's refusal: a refused connection is
            // told apart from one held to the deadline even on a loaded machine (1 s and 1 s were
            // missed once by a loaded CI).
            limits.requestDeadline = 3
            limits.maximumConnectionsPerSource = 2
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(RecordingTarget(), tls: tls, limits: limits).use { served in
                let outcome = try await offPool { () -> (third: Bool, held: [Bool], seconds: Double) in
                    let silent = try (0..<2).map { _ in try HTTPServerLimitsTests.RawClient(port: served.port, timeout: 8) }
                    usleep(500_000)
                    let third = try HTTPServerLimitsTests.RawClient(port: served.port, timeout: 2.5).readUntilClosed().closed
                    let began = Date()
                    return (third, silent.map { $0.readUntilClosed().closed }, Date().timeIntervalSince(began))
                }
                #expect(outcome.third, "a third connection from one source was kept")
                #expect(outcome.held == [true, true], "\(outcome.held)")
                // 3 s deadline, counted from accept; the bound leaves room for a loaded machine.
                #expect(outcome.seconds < 8, "closing took \(outcome.seconds) s")
            }
        }
    }

    @Test func theOriginFetchesItsIssuersDirectoryOverTLSFromWhomItTrusts() async throws {
        try await Self.withCertificates { certificates in
            let keys = TemporaryDirectory()
            defer { keys.remove() }
            let ring = try IssuerKeyRing(directory: keys.path + "/keys", schedule: try KeyRotationSchedule(lifetime: 86400, overlap: 3600))
            let issuer = IssuerResponder(keys: ring, credentials: BearerCredentials(credentials: [IssuerTests.credential]), limiter: IssuanceRateLimiter(perHour: 10, burst: 10))
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(issuer, tls: tls).use { served in
                func verifier(trusting caFile: String) throws -> PrivateTokenVerifier {
                    PrivateTokenVerifier(
                        issuerName: "127.0.0.1", originName: "pir.test", directoryURL: served.url(IssuerDirectory.wellKnownPath),
                        spent: try SpentTokenStore(path: nil), fetchTimeout: testClientTimeout, tls: try ClientTLS(caFile: caFile),
                        logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
                }
                let trusting = try verifier(trusting: certificates.caFile)
                #expect(await trusting.refreshKeys())
                #expect(Set(trusting.keys) == Set(ring.keys.map(\.key.publicKeyDER)))
                let stranger = try verifier(trusting: certificates.otherCAFile)
                #expect(await stranger.refreshKeys() == false)
                #expect(stranger.keys.isEmpty)
            }
        }
    }

    /// The hop Apple's relay makes with HTTP/2: NetExt's relay reaches a gateway that serves TLS
    /// over HTTP/2 (ALPN), every request of the exchange (the key fetch and the encapsulated
    /// request) as a stream of one kept connection; a plain-HTTP upstream is spoken to in HTTP/1.1.
    @Test func theRelayReachesATLSGatewayOverHTTP2AndAPlainOneOverHTTP1() async throws {
        try await Self.withCertificates { certificates in
            let keys = TemporaryDirectory()
            defer { keys.remove() }
            let target = RecordingTarget()
            try await Served.start(target).use { targetServer in
                let ring = try GatewayKeyRing(directory: keys.path + "/gateway-keys", schedule: try KeyRotationSchedule(lifetime: 86400, overlap: 3600))
                let tap = Wiretap(GatewayResponder(keys: ring, targets: ["service.test": targetServer.url("")]))
                let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
                try await Served.start(tap, tls: tls).use { gateway in
                    let upstream = HTTPUpstream(timeout: testClientTimeout, tls: try ClientTLS(caFile: certificates.caFile))
                    let relay = RelayResponder(gatewayURL: gateway.url("/gateway"), keysURL: gateway.url("/ohttp-keys"), upstream: upstream)
                    try await Served.start(relay).use { relayServer in
                        let transport = ObliviousTransport(relayURL: relayServer.url("/relay"), timeout: testClientTimeout)
                        for index in 0..<3 {
                            let body = Array("query \(index)".utf8)
                            let answer = try await transport.send(ServiceRequest(method: "POST", url: URL(string: "http://service.test/q")!, body: body))
                            #expect(answer.status == 200)
                            #expect(answer.body == body.reversed())
                        }
                    }
                }
                let versions = tap.versions.withLock { $0 }
                #expect(versions.count >= 4, "\(versions)")  // at least one key fetch and three requests
                #expect(versions.allSatisfy { $0 == 2 }, "the gateway was reached over HTTP/\(versions)")
                // The gateway's own hop to the plain-HTTP target: HTTP/1.1.
                #expect(target.requests.withLock { $0.map(\.majorVersion) } == [1, 1, 1])
            }
        }
    }
}
