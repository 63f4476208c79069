import Foundation
import MASQUERelay
import NetExtCore
import Synchronization
import Testing
@testable import RelayProvider

/// `RelayChain` over a recording transport (the seam HTTP/3 will use): which relay is reached
/// how, with what, and when the chain is built again.
@Suite("Relay chains over a transport")
struct RelayChainTests {
    /// What the fake transports were asked, in order.
    final class Record: Sendable {
        let events = Mutex<[String]>([])
        func add(_ event: String) { events.withLock { $0.append(event) } }
        var all: [String] { events.withLock { $0 } }
    }

    final class FakeTransport: RelayTransport {
        let name: String
        let record: Record
        let connected = Atomic<Bool>(true)

        init(_ name: String, record: Record) {
            self.name = name
            self.record = record
        }

        var isConnected: Bool { connected.load(ordering: .acquiring) }
        func carry(socket: Int32, toHost host: String, port: UInt16, ended: (@Sendable () -> Void)?) async throws { record.add("\(name) carry \(host):\(port)") }
        func openUDP(toHost host: String, port: UInt16) async throws -> any RelayDatagramPath { throw CancellationError() }
        func connect(through next: RelayEndpoint) async throws -> any RelayTransport {
            record.add("\(name) through \(Self.describe(next))")
            return FakeTransport(next.host, record: record)
        }
        func close() async { record.add("\(name) closed") }

        static func describe(_ endpoint: RelayEndpoint) -> String {
            "\(endpoint.host):\(endpoint.port) headers=\(endpoint.additionalHeaders.map { "\($0.name)=\($0.value)" }.joined(separator: ",")) pins=\(endpoint.pinnedPublicKeys.count) udp=\(endpoint.udpPathTemplate)"
        }
    }

    final class FakeMaker: RelayTransportMaker {
        let record: Record
        let made = Mutex<[FakeTransport]>([])
        init(record: Record) { self.record = record }
        func connect(to endpoint: RelayEndpoint) async throws -> any RelayTransport {
            record.add("connect \(FakeTransport.describe(endpoint))")
            let transport = FakeTransport(endpoint.host, record: record)
            made.withLock { $0.append(transport) }
            return transport
        }
    }

    @Test("the first relay is reached by the maker and the next through it, each with its own URL, headers, pins and template; a chain with a link down is built again, last link closed first")
    func chain() async throws {
        let record = Record()
        let maker = FakeMaker(record: record)
        let relays = [
            RelayHop(http2RelayURL: "https://ingress.example:8443", additionalHTTPHeaderFields: ["X-B": "2", "Proxy-Authorization": "Bearer a"]),
            RelayHop(http2RelayURL: "https://egress.example/masque/{target_host}/{target_port}/", rawPublicKeys: [Data([0x30, 0x01, 0x00]).base64EncodedString()]),
        ]
        let chain = try RelayChain(relays: relays, trustRoots: nil, maker: maker)
        let last = try await chain.client()
        try await last.carry(socket: -1, toHost: "10.20.0.5", port: 80, ended: nil)
        _ = try await chain.client()
        #expect(record.all == [
            "connect ingress.example:8443 headers=Proxy-Authorization=Bearer a,X-B=2 pins=0 udp=/.well-known/masque/udp/{target_host}/{target_port}/",
            "ingress.example through egress.example:443 headers= pins=1 udp=/masque/{target_host}/{target_port}/",
            "egress.example carry 10.20.0.5:80",
        ])
        // The first link went down: the whole chain is made again.
        maker.made.withLock { $0[0].connected.store(false, ordering: .releasing) }
        _ = try await chain.client()
        #expect(Array(record.all.dropFirst(3)) == [
            "egress.example closed", "ingress.example closed",
            "connect ingress.example:8443 headers=Proxy-Authorization=Bearer a,X-B=2 pins=0 udp=/.well-known/masque/udp/{target_host}/{target_port}/",
            "ingress.example through egress.example:443 headers= pins=1 udp=/masque/{target_host}/{target_port}/",
        ])
    }

    @Test("a relay without an HTTP/2 URL is refused when the chain is made, with a sentence")
    func noHTTP2URL() {
        #expect(throws: NetExtError.self) { try RelayChain(relays: [RelayHop(http3RelayURL: "https://h3.example")], trustRoots: nil) }
    }
}
