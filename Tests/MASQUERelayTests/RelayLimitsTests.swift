import Foundation
import Glibc
import MASQUERelay
import NetExtTestSupport
import NIOSSL
import Testing

/// The relay's caps on what one client holds (`RelayLimits`), against its listener on loopback:
/// raw TCP connections that never start TLS hold slots, and the python3-h2 client is the client
/// that wants one.
@Suite("MASQUE relay: per-client limits", .serialized)
struct RelayLimitsTests {
    /// A TCP connection to 127.0.0.1:`port` that sends nothing.
    static func idleConnection(to port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: in_port_t(UInt16(port).bigEndian), sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard result == 0 else {
            close(fd)
            throw RelayServerTests.EchoFailure(description: "could not connect to the relay (errno \(errno))")
        }
        return fd
    }

    /// Whether the relay closed `fd` within `seconds` (a read returns end of file), off the pool.
    static func closedByRelay(_ fd: Int32, within seconds: Int) async throws -> Bool {
        try await offPool {
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var byte: UInt8 = 0
            let deadline = Date().addingTimeInterval(Double(seconds))
            while true {
                let count = recv(fd, &byte, 1, 0)
                // An end of file, or a reset (a connection closed before anything was read may be).
                if count == 0 || (count < 0 && errno == ECONNRESET) { return true }
                if count < 0 && errno == EINTR && Date() < deadline { continue }
                return false
            }
        }
    }

    @Test("a client at its connection cap: the next connection is closed at accept and counted; once it lets one go, it connects again")
    func perClientCap() async throws {
        var limits = RelayLimits()
        limits.maximumConnectionsPerClient = 2
        limits.handshakeDeadline = 120  // the idle connections hold their slots for the whole test
        try await RelayServerTests.withRelay(limits: limits) { relay, echo, certificates in
            let first = try Self.idleConnection(to: relay.port)
            defer { close(first) }
            // Closed once, below (closing a number twice could close another test's descriptor
            // that took it: a full run's event loop lost its epoll descriptor so).
            let second = try Self.idleConnection(to: relay.port)
            let held = [first, second]
            // Accepted connections are set up on the event loops in no fixed order: the two are
            // counted before the third arrives.
            for _ in 0..<100 where relay.openConnections < 2 { try await Task.sleep(for: .milliseconds(20)) }
            #expect(relay.openConnections == 2)
            let third = try Self.idleConnection(to: relay.port)
            defer { close(third) }
            #expect(try await Self.closedByRelay(third, within: 5), "the third connection is closed at once")
            #expect(try await !Self.closedByRelay(held[0], within: 1), "the first two stay open")
            let refused = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)"])
            #expect(refused["status"] == nil, "\(refused)")
            #expect(relay.counters.current.connectionsRefused == 2)
            close(second)
            // The relay hears the close and counts the slot free.
            var answer: [String: String] = [:]
            for _ in 0..<50 where answer["status"] != "200" {
                answer = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)"])
                if answer["status"] != "200" { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(answer["status"] == "200" && answer["echoed"] == "yes", "\(answer)")
            #expect(relay.openConnections == 1, "the held connection; the client's went when it exited")
        }
    }

    @Test("a connection that does not finish its TLS handshake in time is closed and counted; a client that does is served")
    func handshakeDeadline() async throws {
        var limits = RelayLimits()
        limits.handshakeDeadline = 0.5
        try await RelayServerTests.withRelay(limits: limits) { relay, echo, certificates in
            let silent = try Self.idleConnection(to: relay.port)
            defer { close(silent) }
            let started = Date()
            #expect(try await Self.closedByRelay(silent, within: 5))
            #expect(Date().timeIntervalSince(started) < 3)
            #expect(relay.counters.current.handshakesTimedOut == 1)
            let answer = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)", "--payload", "ping"])
            #expect(answer["status"] == "200" && answer["echoed"] == "yes", "\(answer)")
            // Its handshake finished: it was not cut when the deadline passed during its exchange.
            #expect(relay.counters.current.handshakesTimedOut == 1)
        }
    }

    @Test("the streams a connection may hold are the relay's HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS")
    func streamsCap() async throws {
        var limits = RelayLimits()
        limits.maximumStreamsPerConnection = 7
        try await RelayServerTests.withRelay(limits: limits) { relay, echo, certificates in
            let answer = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)"])
            #expect(answer["max_streams"] == "7", "\(answer)")
        }
        try await RelayServerTests.withRelay { relay, echo, certificates in
            let answer = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", certificates.caFile, "tcp", "127.0.0.1:\(echo.tcpPort)"])
            #expect(answer["max_streams"] == "\(RelayLimits().maximumStreamsPerConnection)", "\(answer)")
        }
    }

    @Test("an HTTP/2 connection without a stream for the idle deadline is closed and counted; one holding a quiet flow is kept, and closed once the flow ends")
    func idleDeadline() async throws {
        var limits = RelayLimits()
        limits.idleDeadline = 1
        try await RelayServerTests.withRelay(tokens: ["client-token"], limits: limits) { relay, echo, certificates in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile))
            // No stream ever: closed after the deadline.
            let idle = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, token: "client-token")
            #expect(try await Self.disconnects(idle, within: 5))
            #expect(relay.counters.current.idleConnectionsClosed == 1)
            // A flow open (and silent) for three deadlines: the connection stays.
            let busy = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots, token: "client-token")
            let pair = try RelayClientTests.connectedPair()
            try await busy.carry(socket: pair.flow, toHost: "127.0.0.1", port: echo.tcpPort)
            try await Task.sleep(for: .seconds(3))
            #expect(busy.isConnected, "a connection with an open flow is not idle")
            let message = Array("still here".utf8)
            _ = send(pair.app, message, message.count, 0)
            #expect(try await RelayClientTests.receive(pair.app, count: message.count) == message)
            // The flow ends: the deadline runs again from there.
            close(pair.app)
            #expect(try await Self.disconnects(busy, within: 5))
            #expect(relay.counters.current.idleConnectionsClosed == 2)
            await busy.close()
            await idle.close()
        }
    }

    /// Whether `client`'s connection closes within `seconds` (polled every 100 ms).
    static func disconnects(_ client: RelayClient, within seconds: Double) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if !client.isConnected { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return !client.isConnected
    }
}
