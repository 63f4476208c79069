import Foundation
import HTTPCapsules
import MASQUERelay
import NetExtCore
import NIOSSL
import Synchronization
import Testing

/// connect-ip through `netext-server relay`'s listener on loopback, driven by the python3-h2
/// client (scripts/lib/masque-client.py, not NetExt's code). The relay's network is in memory: a
/// host answering ICMP echo requests, as 10.20.0.5 would, from another thread (as a TUN
/// interface's reader does), and keeping every packet it was given. The lab (scripts/e2e/relay.sh)
/// runs the same over a real TUN interface.
@Suite("MASQUE relay: connect-ip (RFC 9484) over HTTP/2", .serialized)
struct ConnectIPServerTests {
    final class EchoingNetwork: Sendable {
        let given = Mutex<[[UInt8]]>([])
        let router = Mutex<ConnectIPRouter?>(nil)
        private let queue = DispatchQueue(label: "test.connect-ip.network")

        func send(_ packet: UnsafeRawBufferPointer) -> Bool {
            let bytes = Array(packet)
            given.withLock { $0.append(bytes) }
            queue.async { [self] in
                guard let reply = ConnectIPPackets.echoReply(to: bytes), let router = router.withLock({ $0 }) else { return }
                reply.withUnsafeBytes { router.fromNetwork($0) }
            }
            return true
        }
    }

    static func withIPRelay(_ body: (RelayServer, ConnectIPRouter, EchoingNetwork, String) async throws -> Void) async throws {
        let network = EchoingNetwork()
        let router = try ConnectIPRouter(pools: [try IPPrefix("10.77.0.0/24")]) { network.send($0) }
        network.router.withLock { $0 = router }
        try await RelayServerTests.withRelay(allow: ["10.20.0.0/24"], ipRouter: router) { relay, _, certificates in
            try await body(relay, router, network, certificates.caFile)
        }
    }

    @Test("a tunnel: 200 with capsule-protocol, an address from the pool and the allowed routes, then pings answered; a spoofed packet never reaches the network")
    func ping() async throws {
        try await Self.withIPRelay { relay, router, network, caFile in
            let answer = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", caFile, "ip", "--ping", "10.20.0.5", "--count", "3", "--spoof"])
            #expect(answer["status"] == "200", "\(answer)")
            #expect(answer["capsule-protocol"] == "?1", "\(answer)")
            #expect(answer["assigned"] == "10.77.0.2/32 request=0", "\(answer)")
            #expect(answer["routes"] == "10.20.0.0-10.20.0.255/0", "\(answer)")
            #expect(answer["ping"] == "ok" && answer["replies"] == "3", "\(answer)")
            let given = network.given.withLock { $0 }
            #expect(given.count == 3 && given.allSatisfy { $0[12..<16] == [10, 77, 0, 2] }, "only the three pings from the assigned address: \(given.count)")
            #expect(router.counters.droppedFromClients == 1 && router.counters.packetsToNetwork == 3 && router.counters.packetsFromNetwork == 3)
            #expect(relay.counters.current.ipStreams == 1)
        }
    }

    @Test("NetExt's own client (RelayClient.openIPTunnel): the assigned address and the advertised routes, three pings answered; an oversized or empty packet is not sent; a refused scope throws the relay's status")
    func netextClient() async throws {
        try await Self.withIPRelay { relay, router, network, caFile in
            let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(caFile))
            let client = try await RelayClient.connect(host: "127.0.0.1", port: relay.port, trustRoots: roots)
            let tunnel = try await client.openIPTunnel()
            #expect(tunnel.assignedAddresses.map(\.description) == ["10.77.0.2/32"])
            #expect(tunnel.routes == [IPAddressRange(version: 4, start: [10, 20, 0, 0], end: [10, 20, 0, 255])])
            var replies = tunnel.packets.makeAsyncIterator()
            for sequence in 1...3 {
                #expect(tunnel.send(ConnectIPPackets.icmp(from: [10, 77, 0, 2], to: [10, 20, 0, 5], sequence: UInt16(sequence))))
                let reply = try #require(await replies.next())
                #expect(reply[9] == 1 && reply[20] == 0, "an ICMP echo reply")
                #expect(Array(reply[12..<16]) == [10, 20, 0, 5] && Array(reply[16..<20]) == [10, 77, 0, 2])
            }
            #expect(!tunnel.send([]) && !tunnel.send([UInt8](repeating: 0x45, count: RelayIPTunnel.maximumPacket + 1)))
            #expect(network.given.withLock { $0.count } == 3 && router.counters.packetsFromNetwork == 3)
            tunnel.close()
            do {
                _ = try await client.openIPTunnel(scope: ConnectIPScope(target: .prefix(try IPPrefix("192.0.2.0/24"))))
                Issue.record("a scope outside the allowed destinations was opened")
            } catch let failure as RelayClient.Failure {
                #expect(failure.status == 403, "\(failure)")
            }
            await client.close()
        }
    }

    @Test("each tunnel gets an address of its own (the pool is walked on, so a closed tunnel's address is not handed out again at once)")
    func addresses() async throws {
        try await Self.withIPRelay { relay, router, _, caFile in
            let first = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", caFile, "ip"])
            #expect(first["assigned"] == "10.77.0.2/32 request=0", "\(first)")
            let held = try #require(router.lease { $0.count })
            #expect(held.addresses.map(\.description) == ["10.77.0.3/32"])
            let second = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", caFile, "ip"])
            #expect(second["assigned"] == "10.77.0.4/32 request=0", "\(second)")
            router.release(held)
        }
    }

    @Test("ADDRESS_REQUEST is answered with ADDRESS_ASSIGN: the lease for its family under its ID; a family without a pool refused with the all-zero address")
    func addressRequest() async throws {
        try await Self.withIPRelay { relay, _, _, caFile in
            let v4 = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", caFile, "ip", "--request", "4"])
            #expect(v4["answered"] == "10.77.0.2/32 request=7", "\(v4)")
            let v6 = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", caFile, "ip", "--request", "6"])
            // The output keeps the last line of a key: the refusal follows the lease.
            #expect(v6["answered"] == "::/128 request=7", "\(v6)")
        }
    }

    @Test("scopes: one outside the allowed destinations is refused 403, a name 501, a bad path 400; a narrow one is advertised narrow",
          arguments: [
            (["10.30.0.0/24", "*"], "403", nil as String?),
            (["intranet.example", "*"], "501", nil),
            (["10.20.0.1/24", "*"], "400", nil),
            (["10.20.0.0/28", "17"], "200", "10.20.0.0-10.20.0.15/17"),
          ])
    func scopes(scope: [String], status: String, routes: String?) async throws {
        try await Self.withIPRelay { relay, _, _, caFile in
            let answer = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", caFile, "ip"] + scope)
            #expect(answer["status"] == status, "\(answer)")
            if let routes { #expect(answer["routes"] == routes, "\(answer)") }
        }
    }

    @Test("a pool with room for one client: a second tunnel at once is refused 503")
    func exhausted() async throws {
        let network = EchoingNetwork()
        let router = try ConnectIPRouter(pools: [try IPPrefix("10.77.0.0/30")]) { network.send($0) }
        try await RelayServerTests.withRelay(allow: ["10.20.0.0/24"], ipRouter: router) { relay, _, certificates in
            let held = try #require(router.lease { $0.count })
            let answer = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", certificates.caFile, "ip"])
            #expect(answer["status"] == "503", "\(answer)")
            router.release(held)
            let after = try await RelayServerTests.client(["127.0.0.1:\(relay.port)", certificates.caFile, "ip"])
            #expect(after["status"] == "200", "\(after)")
        }
    }
}
