import Foundation
import Glibc
import HTTPServing
import Logging
import MASQUERelay
import NetExtCore
import NetExtTestSupport
import NIOSSL
import Synchronization
import Testing

/// The relay's client side against `netext-server relay`'s listener, in-process on loopback: an
/// "app" socket (one end of a TCP pair; the client is given the other, as an app proxy is given
/// a flow) carried through a CONNECT stream to the echo server.
@Suite("MASQUE relay client: flows carried over one HTTP/2 connection", .serialized)
struct RelayClientTests {
    /// An "app" socket and the flow's end of its connection, as an app proxy is handed one.
    static func connectedPair() throws -> (app: Int32, flow: Int32) {
        let pair = try LoopbackSockets.connectedPair(timeoutSeconds: 5)
        return (pair.near, pair.far)
    }

    /// `count` bytes from `fd` (fewer if it ends or stalls 20 s), read off the task pool: a
    /// blocking read held there starves other suites' servers on two cores.
    static func receive(_ fd: Int32, count: Int) async throws -> [UInt8] {
        try await offPool {
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while received.count < count {
                let got = recv(fd, &buffer, min(buffer.count, count - received.count), 0)
                if got < 0 && errno == EINTR { continue }  // a signal (another test's child ending), not an end
                if got <= 0 { break }
                received += buffer[0..<got]
            }
            return received
        }
    }

    /// Whether `fd`'s next read is its peer's end (waiting at most 20 s, off the task pool).
    static func readsEnd(_ fd: Int32) async throws -> Bool {
        try await offPool {
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var byte: UInt8 = 0
            var got = recv(fd, &byte, 1, 0)
            while got < 0 && errno == EINTR { got = recv(fd, &byte, 1, 0) }
            return got == 0
        }
    }

    static func withClient(allow: [String] = ["127.0.0.0/8"], _ body: (RelayClient, RelayServer, RelayServerTests.EchoServers) async throws -> Void) async throws {
        try await RelayServerTests.withRelay(allow: allow, tokens: ["client-token"]) { relay, echo, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            let client = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, token: "client-token")
            do {
                try await body(client, relay, echo)
            } catch {
                await client.close()
                throw error
            }
            await client.close()
        }
    }

    @Test("a flow's bytes go through the relay and back; its end reaches the target, and the target's end reaches the app")
    func carriesAFlow() async throws {
        try await Self.withClient { client, relay, echo in
            let pair = try Self.connectedPair()
            defer { close(pair.app) }
            try await client.carry(socket: pair.flow, toHost: "127.0.0.1", port: echo.tcpPort)
            let message = Array("through the relay".utf8)
            _ = send(pair.app, message, message.count, 0)
            #expect(try await Self.receive(pair.app, count: message.count) == message)
            shutdown(pair.app, Int32(SHUT_WR))
            #expect(try await Self.readsEnd(pair.app), "the echo server's close ends the app's connection")
            #expect(relay.counters.current.tcpStreams == 1)
        }
    }

    @Test("8 MB each way at once through one flow: flow control holds both directions (the app writes while the echo answers), every byte back in order")
    func bulkBothWays() async throws {
        try await Self.withClient { client, _, echo in
            let pair = try Self.connectedPair()
            defer { close(pair.app) }
            try await client.carry(socket: pair.flow, toHost: "127.0.0.1", port: echo.tcpPort)
            let size = 8_000_000
            let pattern = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
            let app = pair.app
            let writer = Thread {
                var offset = 0
                while offset < size {
                    let sent = pattern[offset...].withUnsafeBytes { send(app, $0.baseAddress, min($0.count, 65_536), Int32(MSG_NOSIGNAL)) }
                    if sent <= 0 { return }
                    offset += sent
                }
                shutdown(app, Int32(SHUT_WR))
            }
            writer.start()
            let back = try await Self.receive(app, count: size)
            #expect(back.count == size)
            let intact = back == pattern
            #expect(intact, "the echoed bytes differ from those sent")
        }
    }

    @Test("a flow the relay refuses (outside its allowed destinations) throws with the status and Proxy-Status, and its socket is closed")
    func refused() async throws {
        try await Self.withClient(allow: ["10.0.0.0/8"]) { client, _, echo in
            let pair = try Self.connectedPair()
            defer { close(pair.app) }
            do {
                try await client.carry(socket: pair.flow, toHost: "127.0.0.1", port: echo.tcpPort)
                Issue.record("the refused flow was carried")
            } catch let failure as RelayClient.Failure {
                #expect(failure.status == 403)
                #expect(failure.description.contains("destination_ip_prohibited"), "\(failure)")
            }
            #expect(try await Self.readsEnd(pair.app), "the app sees its connection closed")
        }
    }

    @Test("a relay whose certificate does not chain to the trusted CA is not used: connecting fails and says why")
    func untrustedRelay() async throws {
        try await RelayServerTests.withRelay { relay, _, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.otherCAFile))
            do {
                let client = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots)
                await client.close()
                Issue.record("connected to an untrusted relay")
            } catch let failure as RelayClient.Failure {
                #expect(failure.description.contains("not signed by a trusted authority"), "\(failure)")
            }
            #expect(relay.counters.current.tcpStreams == 0)
        }
    }

    @Test("a pinned public key (NERelay.rawPublicKeys) replaces the chain check: the relay's own key is accepted though its CA is not trusted; another key is refused")
    func pinnedKeys() async throws {
        try await RelayServerTests.withRelay { relay, echo, certificates in
            let relayKey = try NIOSSLCertificate.fromPEMFile(certificates.certificateFile)[0].extractPublicKey().toSPKIBytes()
            let untrusted = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.otherCAFile))
            let client = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: untrusted, pinnedPublicKeys: [relayKey])
            let pair = try Self.connectedPair()
            defer { close(pair.app) }
            try await client.carry(socket: pair.flow, toHost: "127.0.0.1", port: echo.tcpPort)
            _ = send(pair.app, "pinned", 6, 0)
            #expect(try await Self.receive(pair.app, count: 6) == Array("pinned".utf8))
            await client.close()
            var otherKey = relayKey
            otherKey[otherKey.count - 1] ^= 0xFF
            do {
                let refused = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, pinnedPublicKeys: [otherKey])
                await refused.close()
                Issue.record("a relay whose key is not pinned was accepted")
            } catch let failure as RelayClient.Failure {
                #expect(failure.description.contains("the connection to the relay failed"), "\(failure)")
            }
        }
    }

    @Test("flows opened one after another over one relay connection: each answered and echoed; the time from asking to the first byte back is printed")
    func manyFlows() async throws {
        try await Self.withClient { client, relay, echo in
            var durations: [Duration] = []
            for index in 0..<100 {
                let pair = try Self.connectedPair()
                defer { close(pair.app) }
                let started = ContinuousClock.now
                try await client.carry(socket: pair.flow, toHost: "127.0.0.1", port: echo.tcpPort)
                let message = Array("flow \(index)".utf8)
                _ = send(pair.app, message, message.count, 0)
                #expect(try await Self.receive(pair.app, count: message.count) == message)
                durations.append(ContinuousClock.now - started)
            }
            #expect(relay.counters.current.tcpStreams == 100)
            let sorted = durations.sorted()
            print("relay new flow to first byte over an established connection (debug build, 100 flows): p50 \(sorted[50]) p90 \(sorted[90])")
        }
    }
}
