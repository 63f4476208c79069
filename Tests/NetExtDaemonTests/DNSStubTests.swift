import Foundation
import Logging
import NetExtCore
import NetExtLinux
import Synchronization
import Testing
@testable import NetExtDaemon

#if canImport(Glibc)
import Glibc
#endif

/// The stub against two fake upstream servers on loopback port 53 (root only: a port below 1024).
private let runsAsRoot = getuid() == 0

@Suite("DNS stub: match domains routed, the tunnel's answers observed", .enabled(if: runsAsRoot, "needs root: binds port 53 on loopback"))
struct DNSStubTests {
    /// A response for `query` carrying one A record `address` (RFC 1035 §4.1).
    static func answer(to query: [UInt8], address: [UInt8]) -> [UInt8] {
        var reply = query
        reply[2] = 0x81
        reply[3] = 0x80
        reply[7] = 1  // ANCOUNT
        return reply + [0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4] + address
    }

    static func query(_ name: String, id: UInt16) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") { bytes += [UInt8(label.utf8.count)] + Array(label.utf8) }
        return bytes + [0, 0, 1, 0, 1]
    }

    /// Answers every query on `address`:53 with `answer`, counting them; closed by `stop`.
    final class FakeUpstream: Sendable {
        let socket: UDPSocket
        let seen = Mutex(0)
        init(_ address: [UInt8], answer: [UInt8]) throws {
            socket = try UDPSocket(bindingTo: SocketAddress(address: address, port: 53))
            Thread.detachNewThread { [self] in
                var buffer = [UInt8](repeating: 0, count: 1500)
                while let received = try? buffer.withUnsafeMutableBytes({ try socket.receive(into: $0) }) {
                    seen.withLock { $0 += 1 }
                    let reply = DNSStubTests.answer(to: Array(buffer[..<received.count]), address: answer)
                    try? reply.withUnsafeBytes { try socket.send($0, to: received.from) }
                }
            }
        }
        func stop() { socket.close() }
    }

    @Test("a free port for UDP and TCP both; names in the domains go to the tunnel's server and its answer is shown to the observer as relayed; other names go to the machine's and are not shown")
    func routesAndObserves() throws {
        let tunnel = try FakeUpstream([127, 0, 71, 1], answer: [10, 20, 0, 5])
        let system = try FakeUpstream([127, 0, 71, 2], answer: [100, 64, 0, 80])
        defer {
            tunnel.stop()
            system.stop()
        }
        let stub = try DNSStub(address: SocketAddress(address: [127, 0, 0, 1], port: 0), tunnelMark: FlowSteering.mark(slot: 3), logger: Logger(label: "test"))
        #expect(stub.address.port != 0)
        stub.update { $0 = DNSRouting(entries: [.init(owner: "rule", matchDomains: ["corp.test"], servers: ["127.0.71.1"])], defaultServers: ["127.0.71.2"]) }
        let observed = Mutex<[[UInt8]]>([])
        stub.observeAnswers { answer in observed.withLock { $0.append(answer) } }
        stub.start()
        defer { stub.stop() }
        // The TCP listener holds the same port.
        let tcp = try #require(TCPSocket.connect(to: stub.address, timeoutMilliseconds: 2000))
        tcp.close()

        let client = try UDPSocket(bindingTo: SocketAddress(address: [127, 0, 0, 1], port: 0))
        defer { client.close() }
        client.setReceiveTimeout(milliseconds: 3000)
        var buffer = [UInt8](repeating: 0, count: 1500)
        func ask(_ name: String, id: UInt16) throws -> [UInt8] {
            try Self.query(name, id: id).withUnsafeBytes { try client.send($0, to: stub.address) }
            let received = try #require(try buffer.withUnsafeMutableBytes { try client.receive(into: $0) })
            return Array(buffer[..<received.count])
        }
        let inside = try ask("www.corp.test", id: 0x1111)
        #expect(Array(inside.suffix(4)) == [10, 20, 0, 5])
        #expect(observed.withLock { $0 } == [inside], "the tunnel's answer was shown to the observer, as relayed")
        let outside = try ask("www.example.test", id: 0x2222)
        #expect(Array(outside.suffix(4)) == [100, 64, 0, 80])
        #expect(observed.withLock { $0.count } == 1, "an answer from the machine's resolver is not observed")
        #expect(tunnel.seen.withLock { $0 } == 1 && system.seen.withLock { $0 } == 1)
        #expect(stub.currentCounters.forwardedToTunnel == 1 && stub.currentCounters.forwardedToSystem == 1)
    }
}
