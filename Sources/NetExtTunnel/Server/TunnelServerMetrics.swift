import CoreMetrics
import Foundation
import NetExtCore
import Synchronization

/// What `netext-server tunnel --metrics-listen` exports (swift-metrics). The data path keeps its
/// own counters under the peer table's lock, as it always has; before each scrape ``collect(_:)``
/// reads them from ``TunnelServer/status()`` and moves each Prometheus counter on by what changed,
/// so a scrape costs the data path nothing. The handshake thread records its durations and cookie
/// replies directly. Peers are labelled by their configured name (the admin's own label, never a
/// key or an address); drops by a short, fixed reason.
public final class TunnelServerMetrics: Sendable {
    public static let descriptions: [MetricDescription] = [
        MetricDescription("netext_tunnel_peers", "Peers configured."),
        MetricDescription("netext_tunnel_peers_connected", "Peers with a session the server can send on now."),
        MetricDescription("netext_tunnel_peer_received_bytes_total", "Inner bytes received from a peer, by peer."),
        MetricDescription("netext_tunnel_peer_sent_bytes_total", "Inner bytes sent to a peer, by peer."),
        MetricDescription("netext_tunnel_peer_received_packets_total", "Inner packets received from a peer, by peer."),
        MetricDescription("netext_tunnel_peer_sent_packets_total", "Inner packets sent to a peer, by peer."),
        MetricDescription("netext_tunnel_peer_handshakes_total", "Handshakes completed with a peer (connections and rekeys), by peer."),
        MetricDescription("netext_tunnel_peer_last_handshake_seconds", "When a peer's latest handshake completed (Unix time; 0: never), by peer."),
        MetricDescription("netext_tunnel_dropped_total", "Datagrams and packets dropped, by reason."),
        MetricDescription("netext_tunnel_cookie_replies_total", "Cookie replies sent to initiations that arrived under load without a valid mac2."),
        MetricDescription(
            "netext_tunnel_handshake_duration_seconds", "Handshake thread time to answer one initiation that completed a handshake.",
            buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1]),
        MetricDescription("netext_tunnel_uptime_seconds", "Seconds since the server started serving."),
    ]

    /// One peer's series and the totals they last exported.
    private struct PeerSeries {
        var counters: [Counter]
        var exported: [UInt64]
        var lastHandshake: Gauge
    }

    private struct Exported {
        var peers: [String: PeerSeries] = [:]
        var drops: [String: (counter: Counter, exported: UInt64)] = [:]
    }

    private let factory: any MetricsFactory
    private let exported = Mutex(Exported())
    private let peers: Gauge
    private let connected: Gauge
    private let uptime: Gauge
    let cookieReplies: Counter
    let handshakeDuration: CoreMetrics.Timer

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.factory = factory
        peers = Gauge(label: "netext_tunnel_peers", factory: factory)
        connected = Gauge(label: "netext_tunnel_peers_connected", factory: factory)
        uptime = Gauge(label: "netext_tunnel_uptime_seconds", factory: factory)
        cookieReplies = Counter(label: "netext_tunnel_cookie_replies_total", factory: factory)
        handshakeDuration = CoreMetrics.Timer(label: "netext_tunnel_handshake_duration_seconds", factory: factory)
    }

    private static let peerCounterLabels = [
        "netext_tunnel_peer_received_bytes_total", "netext_tunnel_peer_sent_bytes_total",
        "netext_tunnel_peer_received_packets_total", "netext_tunnel_peer_sent_packets_total",
        "netext_tunnel_peer_handshakes_total",
    ]

    /// Brings every series up to `status`: gauges set, counters moved on by what changed since the
    /// last collection (a total that went down — a peer reset by a reload — counts from zero
    /// again, as Prometheus' `rate` expects of a restarted counter). Peers no longer configured
    /// lose their series.
    public func collect(_ status: TunnelServerStatus, now: Date = Date()) {
        let factory = self.factory
        peers.record(status.peers.count)
        connected.record(status.peers.count { $0.hasSession })
        uptime.record(max(0, now.timeIntervalSince(status.startedAt)))
        exported.withLock { exported in
            var seen = Set<String>()
            for peer in status.peers {
                seen.insert(peer.name)
                let totals = [peer.bytesReceived, peer.bytesSent, peer.packetsReceived, peer.packetsSent, peer.handshakes]
                var series = exported.peers[peer.name] ?? PeerSeries(
                    counters: Self.peerCounterLabels.map { Counter(label: $0, dimensions: [("peer", peer.name)], factory: factory) },
                    exported: Array(repeating: 0, count: totals.count),
                    lastHandshake: Gauge(label: "netext_tunnel_peer_last_handshake_seconds", dimensions: [("peer", peer.name)], factory: factory))
                for index in totals.indices {
                    let delta = totals[index] >= series.exported[index] ? totals[index] - series.exported[index] : totals[index]
                    if delta > 0 { series.counters[index].increment(by: Int64(clamping: delta)) }
                    series.exported[index] = totals[index]
                }
                series.lastHandshake.record(peer.lastHandshake?.timeIntervalSince1970 ?? 0)
                exported.peers[peer.name] = series
            }
            for (name, series) in exported.peers where !seen.contains(name) {
                series.counters.forEach { $0.destroy() }
                series.lastHandshake.destroy()
                exported.peers[name] = nil
            }
            for (reason, total) in status.dropped {
                let label = ServerDropReason(rawValue: reason)?.metricLabel ?? "other"
                var entry = exported.drops[label] ?? (Counter(label: "netext_tunnel_dropped_total", dimensions: [("reason", label)], factory: factory), 0)
                if total > entry.exported { entry.counter.increment(by: Int64(clamping: total - entry.exported)) }
                entry.exported = total
                exported.drops[label] = entry
            }
        }
    }
}
