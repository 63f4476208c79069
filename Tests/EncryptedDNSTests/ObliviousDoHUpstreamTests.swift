import Foundation
import HTTPServing
import Logging
import NIOCore
import NIOPosix
import NetExtCore
import NetExtTestSupport
import ObliviousHTTP
import PrivacyServices
import Testing
@testable import EncryptedDNS

/// netextd's Oblivious DoH upstream (RFC 9230) through NetExt's proxy to NetExt's target, whose
/// resolver is Debian's unbound over DNS over HTTPS: every hop real, on loopback, over TLS.
@Suite("Oblivious DoH upstream through proxy and target to unbound", .serialized)
final class ObliviousDoHUpstreamTests: @unchecked Sendable {
    let certificates: TestCertificates
    let unbound: UnboundServer
    let directory = NSTemporaryDirectory() + "netext-odoh-keys-\(UUID().uuidString)"
    let ring: ObliviousDoHKeyRing
    let resolver: DNSOverHTTPSUpstream
    let target: HTTPServer
    let targetPort: Int
    let proxy: HTTPServer
    let proxyPort: Int
    let loop = MultiThreadedEventLoopGroup.singleton.next()

    init() async throws {
        certificates = try await TestCertificates.make()
        do { unbound = try await UnboundServer.start(certificates: certificates) } catch {
            certificates.remove()
            throw error
        }
        let trust = DNSServerTrust(caFile: certificates.caFile)
        // A key born two minutes ago that lives one, without overlap: the test's rotate retires it.
        ring = try ObliviousDoHKeyRing(
            directory: directory, schedule: try KeyRotationSchedule(lifetime: 60, overlap: 0), now: UInt64(Date().timeIntervalSince1970) - 120)
        let resolver = try DNSOverHTTPSUpstream(url: "https://dns.lab.test:\(unbound.httpsPort)/dns-query", address: [127, 0, 0, 1], trust: trust, eventLoop: loop)
        self.resolver = resolver
        let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
        let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        target = HTTPServer(responder: ObliviousDoHTargetResponder(keys: ring) { try? await resolver.exchange($0, timeoutMilliseconds: 10_000).get() }, logger: quiet, tls: tls)
        targetPort = try await target.start(host: "127.0.0.1", port: 0)
        proxy = HTTPServer(
            responder: ObliviousDoHProxyResponder(targets: ["localhost:\(targetPort)"], upstream: HTTPUpstream(timeout: 15, tls: try ClientTLS(caFile: certificates.caFile))),
            logger: quiet, tls: tls)
        proxyPort = try await proxy.start(host: "127.0.0.1", port: 0)
    }

    deinit {
        resolver.shutdown()
        unbound.stop()
        certificates.remove()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func stopServers() async {
        await proxy.shutdown()
        await target.shutdown()
    }

    func upstream(configs: [UInt8]? = nil) throws -> ObliviousDoHUpstream {
        try ObliviousDoHUpstream(
            proxyURL: "https://localhost:\(proxyPort)/dns-query", address: [127, 0, 0, 1], targetURL: "https://localhost:\(targetPort)/dns-query",
            configs: configs, trust: DNSServerTrust(caFile: certificates.caFile), eventLoop: loop)
    }

    @Test("unbound's answer comes back under the client's identifier; the configuration is fetched through the proxy; a key change is followed")
    func answersAndFollowsKeyRotation() async throws {
        let upstream = try upstream()
        defer { upstream.shutdown() }
        // The first query fetches the configuration and opens three TLS connections (client to
        // proxy, proxy to target, target to unbound): 15 s, as a full run on two cores once held
        // the task pool past 5 s here (the pool's holder is fixed; the bound stays generous).
        let answer = try await upstream.exchange(TestQueries.query("corp.lab.test", id: 0x5151), timeoutMilliseconds: 15_000).get()
        #expect(answer[0] == 0x51 && answer[1] == 0x51)
        #expect(EncryptedUpstreamTests.firstAddress(answer) == "10.20.0.5")
        // Many at once share the fetched configuration and the one proxy connection. 15 s each:
        // a rehearsal of CI with a second test run beside it once took more than 5 s here (the
        // bound catches a hang; it is not a speed check).
        try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for index in 0..<16 {
                group.addTask { (index, EncryptedUpstreamTests.firstAddress(try await upstream.exchange(TestQueries.query("host\(index).lab.test", id: UInt16(index)), timeoutMilliseconds: 15_000).get())) }
            }
            for try await (index, address) in group { #expect(address == "10.1.0.\(index)") }
        }
        // The target retires the key the client holds: 401, a fresh configuration, the answer.
        let old = ring.keys.map(\.key.keyID)
        try ring.rotate(now: UInt64(Date().timeIntervalSince1970))
        #expect(!ring.keys.contains { old.contains($0.key.keyID) })
        let after = try await upstream.exchange(TestQueries.query("www.lab.test"), timeoutMilliseconds: 15_000).get()
        #expect(EncryptedUpstreamTests.firstAddress(after) == "198.51.100.80")
        await stopServers()
    }

    /// Every answered stream used to be reset by the client; swift-nio-http2 servers (the proxy
    /// and target) take 200 resets in 30 s for an attack and answer GOAWAY ENHANCE_YOUR_CALM, so
    /// the 301st query hung. Now 600 queries, 200 at a time, are all answered.
    @Test("600 queries, 200 at a time, all answered through the proxy (answered streams are not reset)")
    func manyQueriesOnOneConnection() async throws {
        let upstream = try upstream()
        defer { upstream.shutdown() }
        for round in 0..<3 {
            let answered = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        let answer = try? await upstream.exchange(TestQueries.query("host\(index % 64).lab.test", id: UInt16(index)), timeoutMilliseconds: 10_000).get()
                        return answer.flatMap(EncryptedUpstreamTests.firstAddress) == "10.1.0.\(index % 64)"
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(answered == 200, "round \(round)")
        }
        await stopServers()
    }

    @Test("a pinned configuration of a key the target does not hold fails with the target's 401, not an answer")
    func pinnedStaleKeyFails() async throws {
        let stranger = ObliviousDoH.TargetKey(privateKey: .init())
        let upstream = try upstream(configs: ObliviousDoHConfig.encodeList([stranger.config]))
        defer { upstream.shutdown() }
        await #expect { try await upstream.exchange(TestQueries.query("www.lab.test"), timeoutMilliseconds: 5000).get() } throws: { error in
            guard case .httpStatus(_, 401)? = error as? EncryptedDNSError else { return false }
            return true
        }
        #expect(throws: EncryptedDNSError.self) {
            try ObliviousDoHUpstream(proxyURL: "https://localhost/dns-query", address: [127, 0, 0, 1], targetURL: "https://t/dns-query", configs: [0, 1], eventLoop: self.loop)
        }
        #expect(ObliviousDoHUpstream.encoded("odoh.lab:8443/x y") == "odoh.lab%3A8443%2Fx%20y")
        await stopServers()
    }
}
