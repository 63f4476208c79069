import Foundation
import Glibc
import Synchronization
import Testing
@testable import NetExtLinux

/// The datagram relay on loopback: an "app" socket connected to a "flow" socket (as netextd's
/// flow socket is connected to the app), the flow socket handed to the relay with an upstream it
/// makes toward a "server" socket.
@Suite("Datagram relay (a transparent proxy's declined UDP flows)")
struct DatagramRelayTests {
    /// A UDP socket on 127.0.0.1, bound to a free port, with a receive timeout of 2 s.
    static func socketOnLoopback() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { throw SystemError("bind", errno: errno) }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    static func connect(_ fd: Int32, toPort port: UInt16) {
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }

    /// One datagram and the port it came from; nil on the timeout.
    static func receive(_ fd: Int32) -> (text: String, port: UInt16)? {
        var buffer = [UInt8](repeating: 0, count: 2_048)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
        }
        guard count >= 0 else { return nil }
        return (String(decoding: buffer[0..<count], as: UTF8.self), UInt16(bigEndian: address.sin_port))
    }

    static func send(_ fd: Int32, _ text: String, toPort port: UInt16? = nil) {
        let bytes = Array(text.utf8)
        if let port {
            var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        } else {
            _ = Glibc.send(fd, bytes, bytes.count, 0)
        }
    }

    /// The app's socket and the flow socket netextd would hand the relay, connected to each other.
    static func appAndFlow() throws -> (app: (fd: Int32, port: UInt16), flow: (fd: Int32, port: UInt16)) {
        let app = try socketOnLoopback()
        let flow = try socketOnLoopback()
        connect(app.fd, toPort: flow.port)
        connect(flow.fd, toPort: app.port)
        return (app, flow)
    }

    @Test("the first datagram goes first, answers come back to the app, later datagrams follow; an idle pair ends with its byte counts")
    func relaysBothWaysThenEnds() async throws {
        let server = try Self.socketOnLoopback()
        let (app, flow) = try Self.appAndFlow()
        defer {
            close(server.fd)
            close(app.fd)
        }
        let relay = try DatagramRelay(idleLimit: .milliseconds(300))
        let outcome = Mutex<FlowRelay.Outcome?>(nil)
        try relay.relay(app: flow.fd, connectingTo: SocketAddress(address: [127, 0, 0, 1], port: server.port), first: Array("first".utf8)) { ended in
            outcome.withLock { $0 = ended }
        }
        let first = try #require(Self.receive(server.fd))
        #expect(first.text == "first")
        Self.send(server.fd, "answer", toPort: first.port)
        #expect(Self.receive(app.fd)?.text == "answer", "the server's answer reached the app through the relay")
        Self.send(app.fd, "second")
        let second = try #require(Self.receive(server.fd))
        #expect(second.text == "second" && second.port == first.port, "later datagrams leave from the same upstream socket")
        // Idle: the pair ends within a few sweeps (the relay sweeps once a second).
        for _ in 0..<50 where outcome.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(100)) }
        let ended = try #require(outcome.withLock { $0 })
        #expect(ended.appToUpstream == 11 && ended.upstreamToApp == 6)
    }

    @Test("a destination no one listens on: the app's datagrams are dropped and the relay goes on with other pairs")
    func refusedDestination() async throws {
        let (app, flow) = try Self.appAndFlow()
        let closedPort = try Self.socketOnLoopback()
        close(closedPort.fd)
        defer { close(app.fd) }
        let relay = try DatagramRelay(idleLimit: .milliseconds(300))
        let outcome = Mutex<FlowRelay.Outcome?>(nil)
        try relay.relay(app: flow.fd, connectingTo: SocketAddress(address: [127, 0, 0, 1], port: closedPort.port), first: Array("hello".utf8)) { ended in
            outcome.withLock { $0 = ended }
        }
        Self.send(app.fd, "again")
        for _ in 0..<50 where outcome.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(100)) }
        let ended = try #require(outcome.withLock { $0 })
        #expect(ended.upstreamToApp == 0)
        #expect(ended.error?.errno == ECONNREFUSED, "the port unreachable was seen: \(String(describing: ended.error))")
    }
}
