import ArgumentParser
import CommandLogging
import Foundation
import HTTPServing
import Logging
import PrivacyServices
import ServiceMetrics

/// `netext-server ohttp-relay`: the Oblivious HTTP relay in front of one gateway.
struct ObliviousRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ohttp-relay",
        abstract: "Relay Oblivious HTTP requests (RFC 9458) to one gateway without identifying their senders.",
        discussion: """
            POST /relay (message/ohttp-req) is forwarded to --gateway with only its body and Content-Type; GET /ohttp-keys \
            passes the gateway's key configurations through; GET /metrics. Nothing about the client is added or logged. \
            SIGHUP reads the TLS certificate again.
            """)

    @Option(help: "Address and port to listen on.") var listen: String
    @Option(help: "The gateway's request URL, e.g. http://10.0.0.2:8082/gateway.") var gateway: String
    @Option(help: "The gateway's key configuration URL (default: /ohttp-keys beside --gateway).") var gatewayKeys: String?
    @OptionGroup var serving: HTTPServingOptions
    @OptionGroup var upstream: UpstreamTrustOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "netext-server.ohttp-relay")
        let address = try HTTPServiceRunner.parseListen(listen, serving: serving)
        guard let gatewayURL = URL(string: gateway), ["http", "https"].contains(gatewayURL.scheme ?? ""), gatewayURL.host != nil else {
            throw ValidationError("--gateway must be an http(s) URL, got \(gateway)")
        }
        let keysURL = gatewayKeys.flatMap(URL.init(string:)) ?? gatewayURL.deletingLastPathComponent().appendingPathComponent("ohttp-keys")
        let metrics = HTTPRoleMetrics(prefix: "netext_relay", descriptions: RelayMetrics.descriptions)
        let responder = RelayResponder(
            gatewayURL: gatewayURL, keysURL: keysURL, upstream: HTTPUpstream(tls: try HTTPServiceRunner.upstreamTLS(upstream)), metrics: RelayMetrics(factory: metrics.exporter))
        try await HTTPServiceRunner.run(responder, metrics: metrics, listen: address, serving: serving, logger: logger)
    }
}
