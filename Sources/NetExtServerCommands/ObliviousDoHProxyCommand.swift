import ArgumentParser
import CommandLogging
import Foundation
import HTTPServing
import Logging
import PrivacyServices
import ServiceMetrics

/// `netext-server odoh-proxy`: the Oblivious DoH proxy (RFC 9230) in front of allow-listed targets.
struct ObliviousDoHProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "odoh-proxy",
        abstract: "Forward Oblivious DoH queries (RFC 9230) to allow-listed targets without identifying their senders.",
        discussion: """
            POST /dns-query?targethost=HOST&targetpath=PATH (application/oblivious-dns-message) goes to https://HOST/PATH \
            with only its body and Content-Type; GET /odohconfigs?targethost=HOST passes the target's configurations \
            through; GET /metrics. Only --target authorities are served (403 with Proxy-Status otherwise). Nothing about \
            the client is added or logged. SIGHUP reads the TLS certificate again.
            """)

    @Option(help: "Address and port to listen on.") var listen: String
    @Option(name: .customLong("target"), help: "A target authority this proxy forwards to: HOST or HOST:PORT (repeatable).") var targets: [String] = []
    @OptionGroup var serving: HTTPServingOptions
    @OptionGroup var upstream: UpstreamTrustOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "netext-server.odoh-proxy")
        let address = try HTTPServiceRunner.parseListen(listen, serving: serving)
        guard !targets.isEmpty else { throw ValidationError("name at least one --target HOST[:PORT]") }
        for target in targets where target.isEmpty || target.contains("/") || target.contains("@") || target.contains("?") {
            throw ValidationError("--target must be HOST or HOST:PORT, got \(target)")
        }
        let metrics = HTTPRoleMetrics(prefix: "netext_odoh_proxy", descriptions: ObliviousDoHProxyMetrics.descriptions)
        let responder = ObliviousDoHProxyResponder(
            targets: Set(targets), upstream: HTTPUpstream(timeout: 10, tls: try HTTPServiceRunner.upstreamTLS(upstream)),
            metrics: ObliviousDoHProxyMetrics(factory: metrics.exporter))
        try await HTTPServiceRunner.run(
            responder, metrics: metrics, listen: address, serving: serving, logger: logger,
            metadata: ["targets": "\(responder.targets.sorted().joined(separator: ","))"])
    }
}
