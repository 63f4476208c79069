import Foundation
import Glibc
import HTTPServing
import Logging
import MASQUERelay
import NetExtCore
import NetExtTestSupport
import Synchronization
import Testing

/// `netext-server relay`'s listener on loopback, driven by a client nobody here wrote: a tiny
/// script on Debian's python3-h2 (scripts/lib/masque-client.py) doing CONNECT and extended
/// CONNECT (connect-udp with DATAGRAM capsules) over TLS. The targets are echo servers on
/// 127.0.0.1 (TCP and UDP); what comes back is what they echoed through the relay.
@Suite("MASQUE relay over HTTP/2 (CONNECT, connect-udp)", .serialized)
struct RelayServerTests {
    /// A TCP echo server on 127.0.0.1 (one thread a connection; it echoes until the client's end,
    /// then closes) and a UDP echo server; both stop with `stop`. Each listening socket is closed
    /// by its own thread once it has left its last call: closed under a blocked thread, its number
    /// could be reused by another test's socket before the thread's next call, which would then
    /// read and write that socket (it did: "echo:" injected into a flow relay test's stream).
    final class EchoServers: @unchecked Sendable {
        let tcp: Int32
        let udp: Int32
        let tcpPort: UInt16
        let udpPort: UInt16
        private let stopped = Atomic<Bool>(false)

        init() throws {
            func bound(_ type: Int32) throws -> (Int32, UInt16) {
                let fd = socket(AF_INET, type, 0)
                var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
                guard result == 0 else { throw EchoFailure(description: "could not bind an echo server on 127.0.0.1 (errno \(errno))") }
                _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
                return (fd, UInt16(bigEndian: address.sin_port))
            }
            (tcp, tcpPort) = try bound(Int32(SOCK_STREAM.rawValue))
            (udp, udpPort) = try bound(Int32(SOCK_DGRAM.rawValue))
            listen(tcp, 16)
            let tcp = tcp, udp = udp
            Thread {
                while true {
                    // A signal (another test's child ending) interrupts a call; it is no end.
                    let client = accept(tcp, nil, nil)
                    if self.stopped.load(ordering: .acquiring) {
                        if client >= 0 { close(client) }
                        close(tcp)
                        return
                    }
                    if client < 0 && errno == EINTR { continue }
                    if client < 0 {
                        close(tcp)
                        return
                    }
                    Thread {
                        var buffer = [UInt8](repeating: 0, count: 65_536)
                        reading: while true {
                            let count = recv(client, &buffer, buffer.count, 0)
                            if count < 0 && errno == EINTR { continue }
                            if count <= 0 { break }
                            var sent = 0
                            while sent < count {
                                let written = buffer[sent..<count].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                                if written < 0 && errno == EINTR { continue }
                                if written <= 0 { break reading }
                                sent += written
                            }
                        }
                        close(client)
                    }.start()
                }
            }.start()
            Thread {
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    var from = sockaddr_storage()
                    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                    let count = withUnsafeMutablePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(udp, &buffer, buffer.count, 0, $0, &length) } }
                    // Woken by `stop` (its shutdown makes the call return 0): done, and the
                    // socket closed here, after the last call on it.
                    if self.stopped.load(ordering: .acquiring) || (count < 0 && errno != EINTR) {
                        close(udp)
                        return
                    }
                    if count < 0 { continue }
                    let reply = Array("echo:".utf8) + buffer[0..<count]
                    _ = withUnsafePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(udp, reply, reply.count, 0, $0, length) } }
                }
            }.start()
        }

        func stop() {
            stopped.store(true, ordering: .releasing)
            // Wakes the threads blocked on the sockets; they close them.
            shutdown(tcp, Int32(SHUT_RDWR))
            shutdown(udp, Int32(SHUT_RDWR))
        }
    }

    struct EchoFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// The python3-h2 client's output lines as a dictionary.
    static func client(_ arguments: [String]) async throws -> [String: String] {
        try await MASQUEClientScript.run(arguments)
    }

    /// Runs `body` with a relay (allowing 127.0.0.0/8 unless told otherwise), echo servers and
    /// certificates, all removed afterwards.
    static func withRelay(
        allow: [String] = ["127.0.0.0/8"], tokens: [String] = [], ipRouter: ConnectIPRouter? = nil, limits: RelayLimits = RelayLimits(),
        _ body: (RelayServer, EchoServers, TestCertificates) async throws -> Void
    ) async throws {
        try await withCleanup(try await TestCertificates.make(), cleanup: { $0.remove() }) { certificates in
            let echo = try EchoServers()
            defer { echo.stop() }
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            let policy = RelayPolicy(allowedTargets: try allow.map { try IPPrefix($0) }, bearerTokens: tokens)
            let relay = try await RelayServer.start(host: "127.0.0.1", port: 0, tls: tls, policy: policy, ipRouter: ipRouter, limits: limits, logger: Logger(label: "test.relay"))
            do {
                try await body(relay, echo, certificates)
            } catch {
                await relay.stop()
                throw error
            }
            await relay.stop()
        }
    }

    @Test("CONNECT: bytes reach the TCP target and its answer comes back; the client's end reaches the target and the target's end ends the stream")
    func tcpTunnel() async throws {
        try await Self.withRelay { relay, echo, certificates in
            let answer = try await Self.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)", "--payload", "ping"])
            #expect(answer["status"] == "200", "\(answer)")
            #expect(answer["echoed"] == "yes", "\(answer)")
            #expect(answer["ended"] == "yes", "\(answer)")
            #expect(relay.counters.current.tcpStreams == 1)
        }
    }

    @Test("CONNECT with 2 MB each way: flow control passes through, every byte comes back")
    func tcpLarge() async throws {
        try await Self.withRelay { relay, echo, certificates in
            let answer = try await Self.client([
                "127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)", "--payload", "0123456789abcdef", "--repeat", "131072",
            ])
            #expect(answer["status"] == "200", "\(answer)")
            #expect(answer["echoed"] == "yes", "\(answer)")
        }
    }

    @Test("connect-udp: the datagram in a DATAGRAM capsule (context 0) reaches the UDP target, and its answer comes back in one; the response says capsule-protocol")
    func udp() async throws {
        try await Self.withRelay { relay, echo, certificates in
            let answer = try await Self.client(["127.0.0.1:\(relay.port)", certificates.caFile, "udp", "127.0.0.1", "\(echo.udpPort)", "--payload", "hello"])
            #expect(answer["status"] == "200", "\(answer)")
            #expect(answer["capsule-protocol"] == "?1", "\(answer)")
            #expect(answer["capsule_type"] == "0 context=0 datagram=echo:hello", "\(answer)")
            #expect(relay.counters.current.udpStreams == 1)
            #expect(relay.counters.current.datagramsToTargets == 1)
        }
    }

    @Test("connect-udp capsules the relay must not pass: an unknown type and another context are dropped, a capsule over the limit resets the stream (PROTOCOL_ERROR)")
    func malformedCapsules() async throws {
        try await Self.withRelay { relay, echo, certificates in
            // Type 0x2A (unknown), then context ID 1 (unregistered), then a good datagram: only
            // the last reaches the echo server and comes back.
            let skipped = try await Self.client([
                "127.0.0.1:\(relay.port)", certificates.caFile, "udp", "127.0.0.1", "\(echo.udpPort)", "--raw", "2a03010203" + "000301aabb" + "0003006869",
            ])
            #expect(skipped["capsule_type"] == "0 context=0 datagram=echo:hi", "\(skipped)")
            #expect(relay.counters.current.datagramsToTargets == 1)
            // A DATAGRAM capsule announcing 100,000 bytes (more than any UDP payload).
            let oversized = try await Self.client([
                "127.0.0.1:\(relay.port)", certificates.caFile, "udp", "127.0.0.1", "\(echo.udpPort)", "--raw", "00800186a0" + "00",
            ])
            #expect(oversized["status"] == "200", "\(oversized)")
            #expect(oversized["reset"] == "1", "\(oversized)")
            #expect(relay.counters.current.malformed == 1)
        }
    }

    @Test("a target outside the allowed destinations: 403 with proxy-status destination_ip_prohibited, and nothing reaches it")
    func forbidden() async throws {
        try await Self.withRelay(allow: ["10.0.0.0/8"]) { relay, echo, certificates in
            let answer = try await Self.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)"])
            #expect(answer["status"] == "403", "\(answer)")
            #expect(answer["proxy-status"] == "netext-relay; error=destination_ip_prohibited", "\(answer)")
            let udp = try await Self.client(["127.0.0.1:\(relay.port)", certificates.caFile, "udp", "127.0.0.1", "\(echo.udpPort)"])
            #expect(udp["status"] == "403", "\(udp)")
            #expect(relay.counters.current.forbidden == 2)
            #expect(relay.counters.current.tcpStreams == 0 && relay.counters.current.udpStreams == 0)
        }
    }

    @Test("with tokens: no credential or a wrong one gets 407 (Proxy-Authenticate: Bearer); the right one is relayed")
    func credentials() async throws {
        try await Self.withRelay(tokens: ["s3cret-token"]) { relay, echo, certificates in
            let none = try await Self.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)"])
            #expect(none["status"] == "407", "\(none)")
            #expect(none["proxy-authenticate"] == "Bearer", "\(none)")
            let wrong = try await Self.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)", "--token", "s3cret-tokem"])
            #expect(wrong["status"] == "407", "\(wrong)")
            let right = try await Self.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)", "--token", "s3cret-token"])
            #expect(right["status"] == "200" && right["echoed"] == "yes", "\(right)")
            #expect(relay.counters.current.unauthorized == 2)
        }
    }

    @Test("without an address pool, connect-ip is answered 501, said plainly")
    func connectIPWithoutPool() async throws {
        try await Self.withRelay { relay, _, certificates in
            let answer = try await Self.client(["127.0.0.1:\(relay.port)", certificates.caFile, "ip"])
            #expect(answer["status"] == "501", "\(answer)")
        }
    }

    @Test("a target nobody listens on: 502 with proxy-status connection_refused")
    func unreachable() async throws {
        try await Self.withRelay { relay, echo, certificates in
            // The UDP echo's port has no TCP listener.
            let answer = try await Self.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.udpPort)"])
            #expect(answer["status"] == "502", "\(answer)")
            #expect(answer["proxy-status"] == "netext-relay; error=connection_refused", "\(answer)")
        }
    }
}
