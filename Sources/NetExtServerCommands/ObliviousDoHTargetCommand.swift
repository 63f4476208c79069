import ArgumentParser
import CommandLogging
import EncryptedDNS
import Foundation
import HTTPServing
import Logging
import NIOCore
import NIOPosix
import NetExtCore
import PrivacyServices
import ServiceMetrics

/// `netext-server odoh-target`: the Oblivious DoH target (RFC 9230) in front of a resolver.
struct ObliviousDoHTargetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "odoh-target",
        abstract: "Answer Oblivious DoH queries (RFC 9230) with a resolver reached over DNS over TLS or HTTPS.",
        discussion: """
            POST /dns-query (application/oblivious-dns-message) is opened, resolved and sealed back; \
            GET /.well-known/odohconfigs publishes the keys (ObliviousDoHConfigs); GET /metrics. Keys live in --keys and \
            rotate with overlap. The resolver is --resolver-address with --resolver-name (DNS over TLS, RFC 7858) or \
            --resolver-url (DNS over HTTPS, RFC 8484). The target sees the proxy, never the client; it logs no names. \
            SIGHUP reads the TLS certificate again.
            """)

    @Option(help: "Address and port to listen on.") var listen: String
    @Option(help: "Directory of the target's keys (created if missing).") var keys: String
    @Option(help: "The resolver's IP address, with :PORT unless 853 (TLS) or the URL's port (HTTPS).") var resolverAddress: String
    @Option(help: "The name the resolver's certificate carries: DNS over TLS to it.") var resolverName: String?
    @Option(help: "The resolver's DoH URL (https://NAME[:PORT]/PATH): DNS over HTTPS to it.") var resolverURL: String?
    @Option(help: "PEM file of the CAs the resolver's certificate must chain to (default: the system's).") var resolverCA: String?
    @Option(help: "Seconds a key serves before the next one takes over (RFC 9230 §5 recommends a day).") var keyLifetime: UInt64 = 86400
    @Option(help: "Seconds old keys still open queries after the switch.") var keyOverlap: UInt64 = 3600
    @Option(help: "Milliseconds the resolver has to answer before the query gets SERVFAIL.") var resolverTimeout: Int = 5000
    @OptionGroup var serving: HTTPServingOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "netext-server.odoh-target")
        let address = try HTTPServiceRunner.parseListen(listen, serving: serving)
        let upstreams = try makeResolver()
        let ring: ObliviousDoHKeyRing
        do throws(PrivacyServiceError) {
            ring = try ObliviousDoHKeyRing(directory: keys, schedule: try KeyRotationSchedule(lifetime: keyLifetime, overlap: keyOverlap))
        } catch { throw HTTPServiceRunner.fail("\(error)") }
        let servers = EncryptedDNSServerSet(servers: [upstreams])
        let timeout = resolverTimeout
        let metrics = HTTPRoleMetrics(prefix: "netext_odoh_target", descriptions: ObliviousDoHTargetMetrics.descriptions)
        let responder = ObliviousDoHTargetResponder(keys: ring, metrics: ObliviousDoHTargetMetrics(factory: metrics.exporter)) { query in
            try? await servers.exchange(query, timeoutMilliseconds: timeout).get()
        }
        defer { servers.shutdown() }
        try await HTTPServiceRunner.run(
            responder, metrics: metrics, listen: address, serving: serving, logger: logger,
            metadata: ["resolver": "\(upstreams[0].serverDescription)", "keys": "\(ring.keys.count)"],
            every: .seconds(30)
        ) {
            do throws(PrivacyServiceError) {
                if try ring.rotate(now: UInt64(Date().timeIntervalSince1970)) { logger.info("Oblivious DoH keys rotated", metadata: ["keys": "\(ring.keys.count)"]) }
            } catch { logger.error("key rotation failed; keeping the current keys", metadata: ["error": "\(error)"]) }
        }
    }

    /// One connection per core to the resolver (each on an event loop of its own).
    func makeResolver() throws -> [any EncryptedDNSUpstream] {
        guard (resolverName == nil) != (resolverURL == nil) else {
            throw ValidationError("give either --resolver-name (DNS over TLS) or --resolver-url (DNS over HTTPS)")
        }
        // `IP`, `IP:PORT` or `[IPv6]:PORT` (a bare IPv6 address has colons but no port).
        let withPort = ListenAddress(parsing: resolverAddress).flatMap { IPPrefix.parseAddress($0.host) != nil ? $0 : nil }
        let host = withPort?.host ?? resolverAddress, port = withPort?.port
        guard let bytes = IPPrefix.parseAddress(host) else { throw ValidationError("--resolver-address must be an IP address[:PORT], got \(resolverAddress)") }
        let trust = DNSServerTrust(caFile: resolverCA)
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        do throws(EncryptedDNSError) {
            return try loops.map { loop throws(EncryptedDNSError) -> any EncryptedDNSUpstream in
                if let resolverURL {
                    return try DNSOverHTTPSUpstream(url: resolverURL, address: bytes, trust: trust, eventLoop: loop)
                }
                let socket: SocketAddress
                do { socket = try SocketAddress(ipAddress: IPPrefix.format(bytes), port: port ?? 853) } catch {
                    throw .connectFailed(server: resolverAddress, reason: "not an IP address")
                }
                return try DNSOverTLSUpstream(address: socket, serverName: resolverName, trust: trust, eventLoop: loop)
            }
        } catch { throw HTTPServiceRunner.fail("\(error)") }
    }
}
