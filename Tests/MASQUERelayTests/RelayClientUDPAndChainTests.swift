import Foundation
import Glibc
import NetExtTestSupport
import HTTPServing
import Logging
import MASQUERelay
import NetExtCore
import NIOSSL
import Synchronization
import Testing

/// The relay client's UDP flows (connect-udp), chained relays (a second relay reached through
/// a CONNECT stream of the first) and additional header fields, against `netext-server relay`'s
/// listener in-process on loopback.
@Suite("MASQUE relay client: UDP flows, chained relays, additional header fields", .serialized)
struct RelayClientUDPAndChainTests {
    /// What the UDP echo server answers to `text`.
    static func echoed(_ text: String) -> [UInt8] { Array("echo:\(text)".utf8) }

    /// Gathers a flow's datagrams as they arrive, so that a test waits for them with a deadline.
    final class Collector: Sendable {
        private let received = Mutex<[[UInt8]]>([])

        /// Reads until the flow ends (its stream finishes when the flow is closed).
        init(_ flow: RelayDatagramFlow) {
            Task { [self] in
                for await datagram in flow.datagrams { received.withLock { $0.append(datagram) } }
            }
        }

        /// What arrived once `count` datagrams did, or after `seconds`, whichever is first.
        func wait(for count: Int, seconds: Double = 5) async -> [[UInt8]] {
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            while ContinuousClock.now < deadline, received.withLock({ $0.count }) < count {
                try? await Task.sleep(for: .milliseconds(10))
            }
            return received.withLock { $0 }
        }
    }

    @Test("UDP: datagrams reach the UDP target through connect-udp and their answers come back; an oversized one is not sent")
    func udpFlow() async throws {
        try await RelayClientTests.withClient { client, relay, echo in
            let flow = try await client.openDatagramFlow(toHost: "127.0.0.1", port: echo.udpPort)
            defer { flow.close() }
            let collector = Collector(flow)
            for index in 0..<20 {
                #expect(flow.send(Array("datagram \(index)".utf8)))
            }
            let received = await collector.wait(for: 20)
            #expect(received == (0..<20).map { Self.echoed("datagram \($0)") })
            #expect(!flow.send([UInt8](repeating: 1, count: RelayDatagramFlow.maximumPayload + 1)))
            #expect(flow.send([UInt8](repeating: 7, count: 1_400)))
            #expect(await collector.wait(for: 21).last == Array("echo:".utf8) + [UInt8](repeating: 7, count: 1_400))
            #expect(relay.counters.current.udpStreams == 1)
        }
    }

    @Test("UDP to a target outside the relay's allowed destinations is refused with 403 and its Proxy-Status")
    func udpRefused() async throws {
        try await RelayClientTests.withClient(allow: ["192.0.2.0/24"]) { client, _, echo in
            do {
                _ = try await client.openDatagramFlow(toHost: "127.0.0.1", port: echo.udpPort)
                Issue.record("the refused UDP flow was opened")
            } catch let failure as RelayClient.Failure {
                #expect(failure.status == 403)
                #expect(failure.description.contains("destination_ip_prohibited"), "\(failure)")
            }
        }
    }

    @Test("the credential as an additional header field (Proxy-Authorization) is accepted; without it the relay answers 407")
    func additionalHeaders() async throws {
        try await RelayServerTests.withRelay(tokens: ["header-token"]) { relay, echo, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            let withHeader = try await RelayClient.connect(
                host: "127.0.0.1", port: relay.port, trustRoots: roots,
                additionalHeaders: [(name: "Proxy-Authorization", value: "Bearer header-token"), (name: "X-Relay-Client", value: "netext-test")])
            let flow = try await withHeader.openDatagramFlow(toHost: "127.0.0.1", port: echo.udpPort)
            let collector = Collector(flow)
            flow.send(Array("hello".utf8))
            #expect(await collector.wait(for: 1) == [Self.echoed("hello")])
            flow.close()
            await withHeader.close()
            let without = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots)
            let pair = try RelayClientTests.connectedPair()
            defer { close(pair.app) }
            do {
                try await without.carry(socket: pair.flow, toHost: "127.0.0.1", port: echo.tcpPort)
                Issue.record("carried without a credential")
            } catch let failure as RelayClient.Failure {
                #expect(failure.status == 407)
            }
            await without.close()
        }
    }

    /// Runs `body` with an inner relay (taking `innerTokens`), echo servers, and an outer relay
    /// in front of it that may reach only 127.0.0.1 (token `outer-token`) with a client already
    /// connected to it; all stopped afterwards.
    static func withChain(
        innerTokens: [String] = [],
        _ body: (_ inner: RelayServer, _ outer: RelayServer, _ first: RelayClient, _ echo: RelayServerTests.EchoServers, _ certificates: TestCertificates) async throws -> Void
    ) async throws {
        try await RelayServerTests.withRelay(tokens: innerTokens) { inner, echo, certificates in
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            // The outer relay may reach only the inner relay, not the echo servers' ports directly
            // (both are on 127.0.0.1: the allow-list is by address, so the check is the counters).
            let outer = try await RelayServer.start(
                host: "127.0.0.1", port: 0, tls: tls, policy: RelayPolicy(allowedTargets: [try IPPrefix("127.0.0.1/32")], bearerTokens: ["outer-token"]),
                logger: Logger(label: "test.relay.outer"))
            try await withCleanup(outer, cleanup: { await $0.stop() }) { outer in
                let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
                let first = try await RelayClient.connect(host: "127.0.0.1", port: outer.port, trustRoots: roots, token: "outer-token")
                try await withCleanup(first, cleanup: { await $0.close() }) { first in
                    try await body(inner, outer, first, echo, certificates)
                }
            }
        }
    }

    /// Sends `text` through `client` to the TCP echo server and expects it back.
    static func echoesTCP(_ client: RelayClient, _ echo: RelayServerTests.EchoServers, _ text: String) async throws {
        let pair = try RelayClientTests.connectedPair()
        defer { close(pair.app) }
        try await client.carry(socket: pair.flow, toHost: "127.0.0.1", port: echo.tcpPort)
        let message = Array(text.utf8)
        _ = send(pair.app, message, message.count, 0)
        #expect(try await RelayClientTests.receive(pair.app, count: message.count) == message)
    }

    @Test("chained relays: TCP and UDP flows through a second relay reached through the first; the first sees one CONNECT to the second, the second the flows")
    func chained() async throws {
        try await Self.withChain { inner, outer, first, echo, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            let second = try await first.connectThrough(toHost: "127.0.0.1", port: inner.port, serverName: "localhost", trustRoots: roots)
            try await Self.echoesTCP(second, echo, "through two relays")
            let flow = try await second.openDatagramFlow(toHost: "127.0.0.1", port: echo.udpPort)
            let collector = Collector(flow)
            flow.send(Array("udp through two".utf8))
            #expect(await collector.wait(for: 1) == [Self.echoed("udp through two")])
            flow.close()
            #expect(outer.counters.current.tcpStreams == 1, "the outer relay carries one stream: the inner relay's connection")
            #expect(outer.counters.current.udpStreams == 0)
            #expect(inner.counters.current.tcpStreams == 1 && inner.counters.current.udpStreams == 1)
            await second.close()
        }
    }

    @Test("a relay reached through another by address: the certificate's IP addresses are checked (its peer is a socket pair); one the certificate lacks is refused before any request")
    func chainedByAddress() async throws {
        try await Self.withChain(innerTokens: ["inner-token"]) { inner, _, first, echo, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            do {
                _ = try await first.connectThrough(toHost: "127.0.0.1", port: inner.port, serverName: "192.0.2.7", trustRoots: roots, token: "inner-token")
                Issue.record("a certificate without 192.0.2.7 was accepted for it")
            } catch let failure as RelayClient.Failure {
                #expect(failure.description.contains("192.0.2.7"), "\(failure)")
            }
            #expect(inner.counters.current.tcpStreams == 0 && inner.counters.current.unauthorized == 0, "no request reached the relay")
            // Untrusted roots still fail the chain check, address or not.
            let strangers = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.otherCAFile))
            await #expect(throws: (any Error).self) { _ = try await first.connectThrough(toHost: "127.0.0.1", port: inner.port, trustRoots: strangers, token: "inner-token") }
            let second = try await first.connectThrough(toHost: "127.0.0.1", port: inner.port, trustRoots: roots, token: "inner-token")
            try await Self.echoesTCP(second, echo, "by address through two")
            #expect(inner.counters.current.tcpStreams == 1)
            await second.close()
        }
    }

    @Test("a chain whose first relay refuses the second relay's address fails with the first relay's 403")
    func chainRefused() async throws {
        try await RelayClientTests.withClient(allow: ["192.0.2.0/24"]) { client, relay, _ in
            do {
                _ = try await client.connectThrough(toHost: "127.0.0.1", port: relay.port, serverName: "localhost")
                Issue.record("the chain was built through a relay that refuses it")
            } catch let failure as RelayClient.Failure {
                #expect(failure.status == 403, "\(failure)")
            }
        }
    }
}
