import ArgumentParser
import CommandLogging
import DaemonLifecycle
import Foundation
import Logging
import PrivacyServices
import ServiceMetrics

/// `netext-server issuer`: the Privacy Pass issuer (RFC 9578, token type 0x0002).
struct IssuerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "issuer",
        abstract: "Issue Privacy Pass tokens (blind RSA, RFC 9578) to holders of a credential.",
        discussion: """
            GET /.well-known/private-token-issuer-directory; GET /token-key-for-user-token and POST /issue with \
            'Authorization: Bearer CREDENTIAL'; GET /metrics. Keys live in --keys (created 0700, files 0600) and \
            rotate with overlap. Credentials and tokens are never logged. SIGHUP reads --credentials and the TLS \
            certificate again.
            """)

    @Option(help: "Address and port to listen on, e.g. 127.0.0.1:8081.") var listen: String
    @Option(help: "Directory of the signing keys (created if missing).") var keys: String
    @Option(help: "File of accepted credentials, one per line ('#' comments).") var credentials: String
    @Option(help: "Seconds a key serves before its successor takes over.") var keyLifetime: UInt64 = 30 * 86400
    @Option(help: "Seconds a successor is published before, and its predecessor kept after, the switch.") var keyOverlap: UInt64 = 86400
    @Option(help: "Tokens per hour per credential.") var ratePerHour: Double = 1000
    @Option(help: "Tokens a credential may take at once.") var burst: Double = 200
    @OptionGroup var serving: HTTPServingOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "netext-server.issuer")
        let address = try HTTPServiceRunner.parseListen(listen, serving: serving)
        guard ratePerHour > 0, burst >= 1 else { throw ValidationError("--rate-per-hour must be positive and --burst at least 1") }
        let ring: IssuerKeyRing
        let accepted: BearerCredentials
        do throws(PrivacyServiceError) {
            ring = try IssuerKeyRing(directory: keys, schedule: try KeyRotationSchedule(lifetime: keyLifetime, overlap: keyOverlap))
            accepted = try BearerCredentials(file: credentials)
        } catch { throw HTTPServiceRunner.fail("\(error)") }
        let metrics = HTTPRoleMetrics(prefix: "netext_issuer", descriptions: IssuerMetrics.descriptions)
        let responder = IssuerResponder(
            keys: ring, credentials: accepted, limiter: IssuanceRateLimiter(perHour: ratePerHour, burst: burst), metrics: IssuerMetrics(factory: metrics.exporter))
        metrics.exporter.addCollector { responder.sampleMetrics() }
        try await HTTPServiceRunner.run(
            responder, metrics: metrics, listen: address, serving: serving, logger: logger, metadata: ["keys": "\(ring.keys.count)", "credentials": "\(accepted.count)"],
            reload: { [credentials] in
                // SIGHUP: the credentials file again (a credential added or revoked).
                do throws(PrivacyServiceError) {
                    let fresh = try BearerCredentials(file: credentials)
                    responder.replaceCredentials(fresh)
                    logger.notice("credentials reloaded", metadata: ["credentials": "\(fresh.count)"])
                    return .applied("\(fresh.count) credentials")
                } catch {
                    logger.error("credentials reload refused; still accepting the previous ones", metadata: ["reason": "\(error)"])
                    return .refused("\(error)")
                }
            },
            every: .seconds(30)
        ) {
            do throws(PrivacyServiceError) {
                if try ring.rotate(now: UInt64(Date().timeIntervalSince1970)) { logger.info("token keys rotated", metadata: ["keys": "\(ring.keys.count)"]) }
            } catch { logger.error("key rotation failed; keeping the current keys", metadata: ["error": "\(error)"]) }
        }
    }
}
