import ArgumentParser
import CommandLogging
import Foundation
import HTTPServing
import Logging
import PrivacyServices
import ServiceMetrics

/// `netext-server ohttp-gateway`: the Oblivious HTTP gateway in front of allow-listed targets.
struct ObliviousGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ohttp-gateway",
        abstract: "Open Oblivious HTTP requests (RFC 9458) and forward them to allow-listed targets.",
        discussion: """
            GET /ohttp-keys (application/ohttp-keys); POST /gateway (message/ohttp-req → message/ohttp-res); GET /metrics. \
            --target AUTHORITY=URL allows requests for AUTHORITY and sends them to URL. Keys live in --keys and rotate \
            with overlap. No client address reaches a target; payloads are never logged. SIGHUP reads the TLS certificate again.
            """)

    @Option(help: "Address and port to listen on.") var listen: String
    @Option(help: "Directory of the gateway's keys (created if missing).") var keys: String
    @Option(name: .customLong("target"), help: "AUTHORITY=URL, e.g. pir.example=http://127.0.0.1:8080 (repeatable).") var targets: [String] = []
    @Option(help: "Seconds a key serves before the next key id takes over.") var keyLifetime: UInt64 = 7 * 86400
    @Option(help: "Seconds old keys still open requests after the switch.") var keyOverlap: UInt64 = 86400
    @OptionGroup var serving: HTTPServingOptions
    @OptionGroup var upstream: UpstreamTrustOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "netext-server.ohttp-gateway")
        let address = try HTTPServiceRunner.parseListen(listen, serving: serving)
        guard !targets.isEmpty else { throw ValidationError("name at least one --target AUTHORITY=URL") }
        var allowed: [String: URL] = [:]
        for target in targets {
            let parts = target.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, let url = URL(string: parts[1]), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ValidationError("--target must be AUTHORITY=http(s)://HOST[:PORT], got \(target)")
            }
            allowed[parts[0].lowercased()] = url
        }
        let ring: GatewayKeyRing
        do throws(PrivacyServiceError) {
            ring = try GatewayKeyRing(directory: keys, schedule: try KeyRotationSchedule(lifetime: keyLifetime, overlap: keyOverlap))
        } catch { throw HTTPServiceRunner.fail("\(error)") }
        let metrics = HTTPRoleMetrics(prefix: "netext_gateway", descriptions: GatewayMetrics.descriptions)
        let responder = GatewayResponder(
            keys: ring, targets: allowed, upstream: HTTPUpstream(tls: try HTTPServiceRunner.upstreamTLS(upstream)), metrics: GatewayMetrics(factory: metrics.exporter))
        try await HTTPServiceRunner.run(
            responder, metrics: metrics, listen: address, serving: serving, logger: logger,
            metadata: ["targets": "\(allowed.keys.sorted().joined(separator: ","))", "key_ids": "\(ring.keys.map { String($0.keyID) }.joined(separator: ","))"],
            every: .seconds(30)
        ) {
            do throws(PrivacyServiceError) {
                if try ring.rotate(now: UInt64(Date().timeIntervalSince1970)) { logger.info("gateway keys rotated", metadata: ["key_ids": "\(ring.keys.map { String($0.keyID) }.joined(separator: ","))"]) }
            } catch { logger.error("key rotation failed; keeping the current keys", metadata: ["error": "\(error)"]) }
        }
    }
}
