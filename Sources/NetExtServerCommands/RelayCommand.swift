import ArgumentParser
import CommandLogging
import DaemonLifecycle
import Foundation
import HTTPServing
import Logging
import MASQUERelay
import NetExtCore
import ServiceMetrics

/// `netext-server relay`: a MASQUE relay over HTTP/2 with TLS — CONNECT for TCP (RFC 9113 §8.5),
/// connect-udp with HTTP Datagrams in capsules (RFC 9298, RFC 9297), and connect-ip (RFC 9484)
/// through a TUN interface when it has an address pool.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Relay TCP (CONNECT), UDP (connect-udp) and IP (connect-ip) to allowed targets over HTTP/2 with TLS (MASQUE).",
        discussion: """
            Only targets inside an --allow prefix are reached (none by default: no open proxy); a request for another \
            gets 403, a request without one of the --token-file's bearer tokens or a Privacy Pass token from \
            --privacy-pass-issuer 407 (when either is given; a Privacy Pass token admits its whole connection). TLS offers \
            ALPN h2 only. A client holds at most --max-connections-per-client connections of --max-connections, each with \
            at most --max-streams-per-connection flows, has --handshake-timeout seconds to finish TLS, and an HTTP/2 connection \
            without a flow for --idle-timeout seconds is sent GOAWAY and closed. With --ip-pool, connect-ip tunnels get an address each from the pool and their packets go \
            through a TUN interface (forwarding on; --masquerade for networks with no route back to the pool), only to \
            the --allow prefixes and from the address given; without it, connect-ip is answered 501. SIGHUP reads the \
            TLS certificate again. Logs say why a request was refused, never its bytes.
            """)

    @Option(help: "Address and port to listen on, e.g. 0.0.0.0:8443 or [::]:8443.") var listen: String
    @Option(help: "The relay's certificate chain (PEM, leaf first).") var certificate: String
    @Option(help: "The certificate's private key (PEM).") var key: String
    @Option(help: "A destination prefix the relay may reach (repeat for more), e.g. 10.20.0.0/16.") var allow: [String] = []
    @Option(help: "A file of bearer tokens, one a line; clients must send one (Proxy-Authorization: Bearer …).") var tokenFile: String?
    @Option(help: "connect-ip: the prefix clients' addresses come from (one IPv4, one IPv6), e.g. 10.77.0.0/24; the relay takes its first address.")
    var ipPool: [String] = []
    @Option(help: "connect-ip: the TUN interface's name (%d: the kernel numbers it).") var ipInterface = "nxrelay%d"
    @Option(help: "connect-ip: the TUN interface's MTU.") var ipMTU = 1500
    @Option(help: "connect-ip: masquerade the pools' packets out of this interface (repeat for more).") var masquerade: [String] = []
    @Option(help: "Connections open at once; more are closed at accept.") var maxConnections = RelayLimits().maximumConnections
    @Option(help: "Connections one client (an IPv4 address or an IPv6 /64) may hold at once.")
    var maxConnectionsPerClient = RelayLimits().maximumConnectionsPerClient
    @Option(help: "Flows and tunnels one connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS).")
    var maxStreamsPerConnection = RelayLimits().maximumStreamsPerConnection
    @Option(help: "Seconds a connection has from accept to finish its TLS handshake.") var handshakeTimeout = RelayLimits().handshakeDeadline
    @Option(help: "Seconds an HTTP/2 connection may stay without an open flow or tunnel before it is closed.")
    var idleTimeout = RelayLimits().idleDeadline
    @Option(help: "Mutual TLS: clients must present a certificate that chains to a CA of this PEM file (such a client needs no token).")
    var clientCa: String?
    @OptionGroup var privacyPass: PrivacyPassOriginOptions
    @OptionGroup var upstream: UpstreamTrustOptions
    @Option(help: "Serve Prometheus metrics (streams by kind, refusals by reason, datagrams, connect-ip packets and drops) at http://HOST:PORT/metrics; loopback addresses only.")
    var metricsListen: String?
    @OptionGroup var logging: LoggingOptions

    /// One line at the end: what the relay did, in counts (no client, no target).
    static func logTotals(_ relay: RelayCounters.Values, router: ConnectIPRouter?, logger: Logger) {
        var metadata: Logger.Metadata = [
            "tcpStreams": "\(relay.tcpStreams)", "udpStreams": "\(relay.udpStreams)", "ipStreams": "\(relay.ipStreams)",
            "unauthorized": "\(relay.unauthorized)", "privateTokensRedeemed": "\(relay.privateTokensRedeemed)", "forbidden": "\(relay.forbidden)", "malformed": "\(relay.malformed)", "failed": "\(relay.failed)",
            "connectionsRefused": "\(relay.connectionsRefused)", "handshakesTimedOut": "\(relay.handshakesTimedOut)",
            "idleConnectionsClosed": "\(relay.idleConnectionsClosed)",
        ]
        if let ip = router?.counters {
            metadata["ipPacketsToNetwork"] = "\(ip.packetsToNetwork)"
            metadata["ipPacketsFromNetwork"] = "\(ip.packetsFromNetwork)"
            metadata["ipDroppedFromClients"] = "\(ip.droppedFromClients)"
            metadata["ipDroppedFromNetwork"] = "\(ip.droppedFromNetwork)"
        }
        logger.notice("relay stopped", metadata: metadata)
    }

    /// connect-ip's router and TUN interface, when there are pools.
    static func openIP(
        pools: [IPPrefix], pattern: String, mtu: Int, masquerade: [String], logger: Logger
    ) throws -> (router: ConnectIPRouter, interface: RelayIPInterface)? {
        guard !pools.isEmpty else { return nil }
        // Checked before the interface exists: a pool too small or two of one family.
        _ = try ConnectIPRouter(pools: pools) { _ in false }
        let gateways = pools.map { IPPrefix(address: ConnectIPRouter.gateway(in: $0), length: $0.length) }
        let interface = try RelayIPInterface(pattern: pattern, gateways: gateways, mtu: mtu, masquerade: masquerade, logger: logger)
        let router = try ConnectIPRouter(pools: pools) { interface.write($0) }
        interface.start(router: router, logger: logger)
        return (router, interface)
    }

    func validate() throws {
        guard maxConnections > 0, maxConnectionsPerClient > 0, maxStreamsPerConnection > 0 else {
            throw ValidationError("--max-connections, --max-connections-per-client and --max-streams-per-connection must be at least 1")
        }
        guard handshakeTimeout > 0, handshakeTimeout <= 300 else { throw ValidationError("--handshake-timeout must be more than 0 and at most 300 seconds") }
        guard idleTimeout >= 1, idleTimeout <= 86_400 else { throw ValidationError("--idle-timeout must be at least 1 and at most 86400 seconds") }
        if let metricsListen {
            do throws(MetricsListenerError) { _ = try MetricsListener.parse(metricsListen) } catch { throw ValidationError(error.message) }
        }
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "netext-server.relay")
        guard let address = ListenAddress(parsing: listen) else { throw ValidationError("--listen must be ADDRESS:PORT, got \(listen)") }
        let (host, port) = (address.host, address.port)
        var prefixes: [IPPrefix] = []
        for text in allow {
            do { prefixes.append(try IPPrefix(text, allowHostBits: false)) } catch { throw ValidationError("--allow \(text): \(error)") }
        }
        var tokens: [String] = []
        if let tokenFile {
            guard let text = try? String(contentsOfFile: tokenFile, encoding: .utf8) else { throw ValidationError("--token-file \(tokenFile) cannot be read") }
            tokens = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
            guard !tokens.isEmpty else { throw ValidationError("--token-file \(tokenFile) holds no token") }
        }
        var pools: [IPPrefix] = []
        for text in ipPool {
            do { pools.append(try IPPrefix(text, allowHostBits: false)) } catch { throw ValidationError("--ip-pool \(text): \(error)") }
        }
        guard (1...1500 * 64).contains(ipMTU), ipMTU >= (pools.contains(where: \.isIPv6) ? 1280 : 576) else {
            throw ValidationError("--ip-mtu \(ipMTU) is out of range (576 or more, 1280 or more with an IPv6 pool)")
        }
        guard masquerade.isEmpty || !pools.isEmpty else { throw ValidationError("--masquerade needs --ip-pool (it is for connect-ip's packets)") }
        if prefixes.isEmpty { logger.warning("relay: no --allow prefix; every target will be refused") }
        if tokens.isEmpty && privacyPass.privacyPassIssuer == nil && clientCa == nil { logger.warning("relay: no credential is asked; anyone who reaches it may use it (give --token-file, --privacy-pass-issuer or --client-ca)") }
        let tls = try ServerTLS(certificateFile: certificate, keyFile: key)
        let verifier = try await privacyPass.makeVerifier(defaultOriginName: "relay.netext", defaultSpentTokens: nil, upstream: upstream, logger: logger)
        let policy = RelayPolicy(allowedTargets: prefixes, bearerTokens: tokens, privateTokens: verifier)
        let allowed = prefixes.map(\.description)
        let ip = try Self.openIP(pools: pools, pattern: ipInterface, mtu: ipMTU, masquerade: masquerade, logger: logger)
        defer { ip?.interface.stop() }
        let metricsListen = self.metricsListen
        var limits = RelayLimits()
        limits.maximumConnections = maxConnections
        limits.maximumConnectionsPerClient = maxConnectionsPerClient
        limits.maximumStreamsPerConnection = maxStreamsPerConnection
        limits.handshakeDeadline = handshakeTimeout
        limits.idleDeadline = idleTimeout
        let relayLimits = limits
        let clientCA = clientCa
        let asked = [clientCa == nil ? nil : "client certificates", tokens.isEmpty ? nil : "bearer tokens", verifier == nil ? nil : "Privacy Pass"].compactMap { $0 }
        let credentials = asked.isEmpty ? "none" : asked.joined(separator: ", ")
        let connectIP = ip.map { "\($0.interface.name), pools \(pools.map(\.description))" } ?? "off"
        try await ProcessLifecycle(logger: logger).run(reload: {
            do {
                try tls.reload()
                return .applied("TLS certificate read again")
            } catch { return .refused("\(error)") }
        }) { context in
            let server = try await RelayServer.start(host: host, port: port, tls: tls, policy: policy, ipRouter: ip?.router, limits: relayLimits, clientCAFile: clientCA, logger: logger)
            logger.notice("relay listening", metadata: [
                "listen": "\(host):\(server.port)", "allowed": "\(allowed)",
                "connect-ip": "\(connectIP)",
                "credentials": "\(credentials)",
            ])
            var metricsListener: MetricsListener?
            if let metricsListen {
                let exporter = PrometheusExporter(descriptions: RelayServerMetrics.descriptions)
                let metrics = RelayServerMetrics(factory: exporter)
                exporter.addCollector { metrics.collect(server.counters.current, openConnections: server.openConnections, router: ip?.router) }
                metricsListener = try await MetricsListener.start(try MetricsListener.parse(metricsListen), exporter: exporter, logger: logger)
                logger.info("metrics endpoint ready", metadata: ["listen": "\(metricsListener?.address.description ?? metricsListen)"])
            }
            context.ready("relaying on \(host):\(server.port)")
            await context.untilShutdown()
            await server.stop()
            await metricsListener?.stop()
            Self.logTotals(server.counters.current, router: ip?.router, logger: logger)
        }
    }
}
