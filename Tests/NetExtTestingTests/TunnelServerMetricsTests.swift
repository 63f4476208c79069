import Crypto
import Foundation
import Logging
import NetExtCore
import NetExtTestSupport
import ServiceMetrics
import Testing
@testable import NetExtTunnel

/// `netext-server tunnel --metrics-listen`: what the exporter shows of a server's status, and of a
/// real handshake.
@Suite("Tunnel server: metrics")
struct TunnelServerMetricsTests {
    static func peer(_ name: String, received: UInt64, sent: UInt64, handshakes: UInt64, session: Bool = true) -> TunnelServerStatus.Peer {
        TunnelServerStatus.Peer(
            name: name, publicKey: "key-of-\(name)", endpoint: "198.51.100.7:40000", addresses: ["10.99.0.2/32"],
            lastHandshake: handshakes > 0 ? Date(timeIntervalSince1970: 1_700_000_000) : nil, handshakes: handshakes,
            bytesReceived: received, bytesSent: sent, packetsReceived: received / 100, packetsSent: sent / 100, hasSession: session)
    }

    static func status(_ peers: [TunnelServerStatus.Peer], dropped: [String: UInt64] = [:]) -> TunnelServerStatus {
        TunnelServerStatus(
            listen: "0.0.0.0:51900", interface: "netextsrv0", publicKey: "server-key", startedAt: Date(timeIntervalSince1970: 1_700_000_000),
            peers: peers, dropped: dropped)
    }

    @Test("per-peer counters follow the server's totals across scrapes; a removed peer's series go; drops by short reason; no keys or addresses")
    func collectsFromStatus() {
        let exporter = PrometheusExporter(descriptions: TunnelServerMetrics.descriptions)
        let metrics = TunnelServerMetrics(factory: exporter)
        metrics.collect(Self.status(
            [Self.peer("laptop", received: 1000, sent: 2000, handshakes: 1), Self.peer("phone", received: 0, sent: 0, handshakes: 0, session: false)],
            dropped: [ServerDropReason.transportReplayed.rawValue: 3]), now: Date(timeIntervalSince1970: 1_700_000_060))
        var text = exporter.render()
        #expect(PrometheusExposition.problems(in: text).isEmpty, "\(PrometheusExposition.problems(in: text))\n\(text)")
        #expect(exporter.undescribedNames.isEmpty, "\(exporter.undescribedNames)")
        #expect(text.contains("netext_tunnel_peer_received_bytes_total{peer=\"laptop\"} 1000\n"), "\(text)")
        #expect(text.contains("netext_tunnel_peer_handshakes_total{peer=\"laptop\"} 1\n"))
        #expect(text.contains("netext_tunnel_peer_last_handshake_seconds{peer=\"laptop\"} 1700000000.0\n"))
        #expect(text.contains("netext_tunnel_peer_last_handshake_seconds{peer=\"phone\"} 0.0\n"))
        #expect(text.contains("netext_tunnel_peers 2.0\n") && text.contains("netext_tunnel_peers_connected 1.0\n"))
        #expect(text.contains("netext_tunnel_uptime_seconds 60.0\n"))
        #expect(text.contains("netext_tunnel_dropped_total{reason=\"transport_replayed\"} 3\n"))
        for leak in ["key-of-", "198.51.100.7", "server-key"] { #expect(!text.contains(leak), "\(leak) in the metrics") }

        // More traffic; the phone removed by a reload; the laptop's totals reset (its key changed).
        metrics.collect(Self.status([Self.peer("laptop", received: 1500, sent: 2600, handshakes: 2)], dropped: [ServerDropReason.transportReplayed.rawValue: 5]))
        text = exporter.render()
        #expect(text.contains("netext_tunnel_peer_received_bytes_total{peer=\"laptop\"} 1500\n"), "\(text)")
        #expect(text.contains("netext_tunnel_peer_sent_bytes_total{peer=\"laptop\"} 2600\n"))
        #expect(text.contains("netext_tunnel_dropped_total{reason=\"transport_replayed\"} 5\n"))
        #expect(!text.contains("peer=\"phone\""), "a removed peer's series are gone")
        metrics.collect(Self.status([Self.peer("laptop", received: 100, sent: 100, handshakes: 1)]))
        text = exporter.render()
        #expect(text.contains("netext_tunnel_peer_received_bytes_total{peer=\"laptop\"} 1600\n"), "a reset total counts on from zero: \(text)")
    }

    @Test("every drop reason has a short snake-case label, distinct from every other")
    func dropReasonLabels() {
        let labels = ServerDropReason.allCases.map(\.metricLabel)
        #expect(Set(labels).count == labels.count)
        for label in labels { #expect(label.allSatisfy { $0.isLowercase || $0 == "_" || $0.isNumber }, "\(label)") }
        #expect(ServerDropReason.initiationBadMAC1.metricLabel == "initiation_bad_mac1")
        #expect(ServerDropReason.tunWriteRefused.metricLabel == "tun_write_refused")
    }

    @Test("a real handshake shows in the handshake histogram and the peer's handshake counter")
    func handshakeIsRecorded() async throws {
        let laptop = Curve25519.KeyAgreement.PrivateKey()
        let configuration = try TunnelServerReloadTests.configuration(peers: [("laptop", laptop)])
        let exporter = PrometheusExporter(descriptions: TunnelServerMetrics.descriptions)
        let server = try TunnelServer(
            configuration: configuration, logger: Logger(label: "t") { _ in SwiftLogNoOpLogHandler() }, metrics: TunnelServerMetrics(factory: exporter))
        exporter.addCollector { server.metrics.collect(server.status()) }
        try await TunnelServerReloadTests.serving(server, interface: "metrics0") { server, listening in
            guard let (_, _, socket) = try await TunnelServerReloadTests().handshake(laptop, server: listening, index: 31) else {
                Issue.record("the configured peer got no answer"); return
            }
            defer { socket.close() }
            let text = exporter.render()
            #expect(text.contains("netext_tunnel_handshake_duration_seconds_count 1\n"), "\(text)")
            #expect(text.contains("netext_tunnel_peer_handshakes_total{peer=\"laptop\"} 1\n"))
            #expect(text.contains("netext_tunnel_peers_connected 1.0\n"))
            #expect(text.contains("netext_tunnel_cookie_replies_total 0\n"))
            #expect(PrometheusExposition.problems(in: text).isEmpty, "\(PrometheusExposition.problems(in: text))")
        }
    }
}
