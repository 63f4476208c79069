import CoreMetrics
import MASQUERelay
import NetExtCore
import Synchronization

/// What `netext-server relay --metrics-listen` exports (swift-metrics). The relay and its
/// connect-ip router keep their own counters; before each scrape ``collect(_:router:)`` moves each
/// Prometheus counter on by what changed since the last one, so the streams pay nothing for it.
/// Labels are fixed words (a stream's kind, a refusal's reason, a direction) — never a client,
/// a target or an address.
final class RelayServerMetrics: Sendable {
    static let descriptions: [MetricDescription] = [
        MetricDescription("netext_masque_relay_streams_total", "Streams the relay answered 200, by kind (tcp, udp, ip)."),
        MetricDescription("netext_masque_relay_refused_total", "Requests refused, by reason (unauthorized 407, forbidden 403, malformed 400/405/501 and reset capsule streams, failed 502/503)."),
        MetricDescription("netext_masque_relay_datagrams_total", "connect-udp datagrams, by outcome (to_target, dropped)."),
        MetricDescription("netext_masque_relay_ip_packets_total", "connect-ip packets carried, by direction (to_network, from_network)."),
        MetricDescription("netext_masque_relay_ip_dropped_total", "connect-ip packets dropped, by side (from_clients: checks or a refusing interface; from_network: no tunnel for the address or a full stream)."),
        MetricDescription("netext_masque_relay_ip_tunnels", "connect-ip tunnels holding an address now."),
        MetricDescription("netext_masque_relay_connections", "Client connections open now."),
        MetricDescription("netext_masque_relay_private_tokens_redeemed_total", "Privacy Pass tokens redeemed (each admits one connection)."),
        MetricDescription("netext_masque_relay_connections_closed_total", "Connections the relay closed, by reason (over_limit: at accept, the relay or the client at its cap; handshake_timeout)."),
    ]

    /// One exported counter: its series, the total it last exported, and where the total is read.
    private struct Series {
        let counter: Counter
        var exported: Int
        let total: @Sendable (RelayCounters.Values, ConnectIPRouter.Counters) -> Int
    }

    private let series: Mutex<[Series]>
    private let tunnels: Gauge
    private let connections: Gauge

    init(factory: any MetricsFactory) {
        func counter(_ label: String, _ key: String, _ value: String, _ total: @escaping @Sendable (RelayCounters.Values, ConnectIPRouter.Counters) -> Int) -> Series {
            Series(counter: Counter(label: label, dimensions: [(key, value)], factory: factory), exported: 0, total: total)
        }
        series = Mutex([
            counter("netext_masque_relay_streams_total", "kind", "tcp") { relay, _ in relay.tcpStreams },
            counter("netext_masque_relay_streams_total", "kind", "udp") { relay, _ in relay.udpStreams },
            counter("netext_masque_relay_streams_total", "kind", "ip") { relay, _ in relay.ipStreams },
            counter("netext_masque_relay_refused_total", "reason", "unauthorized") { relay, _ in relay.unauthorized },
            counter("netext_masque_relay_refused_total", "reason", "forbidden") { relay, _ in relay.forbidden },
            counter("netext_masque_relay_refused_total", "reason", "malformed") { relay, _ in relay.malformed },
            counter("netext_masque_relay_refused_total", "reason", "failed") { relay, _ in relay.failed },
            counter("netext_masque_relay_datagrams_total", "outcome", "to_target") { relay, _ in relay.datagramsToTargets },
            counter("netext_masque_relay_datagrams_total", "outcome", "dropped") { relay, _ in relay.datagramsDropped },
            counter("netext_masque_relay_ip_packets_total", "direction", "to_network") { _, ip in ip.packetsToNetwork },
            counter("netext_masque_relay_ip_packets_total", "direction", "from_network") { _, ip in ip.packetsFromNetwork },
            counter("netext_masque_relay_ip_dropped_total", "side", "from_clients") { _, ip in ip.droppedFromClients },
            counter("netext_masque_relay_ip_dropped_total", "side", "from_network") { _, ip in ip.droppedFromNetwork },
            Series(counter: Counter(label: "netext_masque_relay_private_tokens_redeemed_total", factory: factory), exported: 0) { relay, _ in relay.privateTokensRedeemed },
            counter("netext_masque_relay_connections_closed_total", "reason", "over_limit") { relay, _ in relay.connectionsRefused },
            counter("netext_masque_relay_connections_closed_total", "reason", "handshake_timeout") { relay, _ in relay.handshakesTimedOut },
            counter("netext_masque_relay_connections_closed_total", "reason", "idle") { relay, _ in relay.idleConnectionsClosed },
        ])
        tunnels = Gauge(label: "netext_masque_relay_ip_tunnels", factory: factory)
        connections = Gauge(label: "netext_masque_relay_connections", factory: factory)
    }

    /// Brings the exported series up to the relay's and router's counters.
    func collect(_ relay: RelayCounters.Values, openConnections: Int, router: ConnectIPRouter?) {
        let ip = router?.counters ?? ConnectIPRouter.Counters()
        tunnels.record(router?.activeLeases ?? 0)
        connections.record(openConnections)
        series.withLock { all in
            for index in all.indices {
                let total = all[index].total(relay, ip)
                if total > all[index].exported { all[index].counter.increment(by: Int64(total - all[index].exported)) }
                all[index].exported = total
            }
        }
    }
}
