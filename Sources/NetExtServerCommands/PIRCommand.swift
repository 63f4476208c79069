import ArgumentParser
import CommandLogging
import DaemonLifecycle
import Foundation
import Logging
import NetExtLinux
import HTTPServing
import PIRService
import ServiceMetrics
import PrivacyPass
import PrivacyServices

/// `netext-server pir`: serves the PIR databases a build wrote.
struct PIRCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pir",
        abstract: "Serve private information retrieval for the URL filter (docs/pir-protocol.md).",
        discussion: "POST /config, /key, /queries (protobuf); GET /metrics. SIGHUP reloads the databases and the TLS certificate; SIGTERM/SIGINT stop. Under systemd (Type=notify) it reports ready once it listens. Query contents are never logged.")

    @Option(help: "A directory written by 'netext-urlfilter-db build'.") var database: String
    @Option(help: "Address and port to listen on, e.g. 127.0.0.1:8080.") var listen: String
    @Option(help: "Threads per query.") var threads = ProcessInfo.processInfo.activeProcessorCount
    @Option(help: "Evaluation keys kept (new keys are dropped first; keys that answered a query are kept over new uploads).") var keyCapacity = 256
    @Option(help: "Megabytes (MiB) of evaluation-key material kept at most, whatever --key-capacity says (a key of the URL filter's parameters is about 1.4 MB).") var keyStoreMegabytes = EvaluationKeyStore.defaultByteBudget >> 20
    @Option(help: "Queries one /queries message may hold (1-64). With Privacy Pass each message spends one token, so this is what one token buys.") var maxQueriesPerRequest = PIRRequestHandler.protocolMaximumQueries
    @Option(help: "Queries waiting to run at most; beyond that, requests are answered 503 with Retry-After.") var queueCapacity = 1024
    @OptionGroup var privacyPass: PrivacyPassOriginOptions
    @OptionGroup var serving: HTTPServingOptions
    @OptionGroup var upstream: UpstreamTrustOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (1...PIRRequestHandler.protocolMaximumQueries).contains(maxQueriesPerRequest) else {
            throw ValidationError("--max-queries-per-request must be 1 to \(PIRRequestHandler.protocolMaximumQueries), got \(maxQueriesPerRequest)")
        }
        guard queueCapacity >= maxQueriesPerRequest else {
            throw ValidationError("--queue-capacity (\(queueCapacity)) must hold at least one request of --max-queries-per-request (\(maxQueriesPerRequest))")
        }
        guard keyCapacity >= 1 else { throw ValidationError("--key-capacity must be at least 1, got \(keyCapacity)") }
        guard (1...65_536).contains(keyStoreMegabytes) else { throw ValidationError("--key-store-megabytes must be 1 to 65536, got \(keyStoreMegabytes)") }
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "netext-server.pir")
        let address = try HTTPServiceRunner.parseListen(listen, serving: serving)
        let useCases: [String: PIRUseCase]
        do throws(PIRServiceError) { useCases = try PIRDatabaseDirectory.load(root: database, threads: threads) } catch {
            FileHandle.standardError.write(Data("netext-server: \(error)\n".utf8))
            throw ExitCode(3)
        }
        let metrics = HTTPRoleMetrics(prefix: "netext_pir", descriptions: PIRMetrics.descriptions)
        let handler = PIRRequestHandler(
            useCases: useCases, keyCapacity: keyCapacity, keyByteBudget: keyStoreMegabytes << 20, maximumQueriesPerRequest: maxQueriesPerRequest,
            metrics: PIRMetrics(factory: metrics.exporter))
        metrics.exporter.addCollector { handler.sampleMetrics() }
        let tls = try HTTPServiceRunner.serverTLS(serving)
        let verifier = try await privacyPass.makeVerifier(
            defaultOriginName: "pir.netext", defaultSpentTokens: database + "/spent-tokens.sqlite", upstream: upstream, logger: logger)
        let server = PIRHTTPServer(handler: handler, logger: logger, authorizer: verifier, workCapacity: queueCapacity, limits: serving.limits, tls: tls, metrics: metrics.server)
        // SIGHUP: reload from disk; keep serving the old databases when the new ones fail to load.
        let databaseRoot = database, threadCount = threads
        let reloadDatabases: @Sendable () async -> ReloadOutcome = {
            do throws(PIRServiceError) {
                let fresh = try PIRDatabaseDirectory.load(root: databaseRoot, threads: threadCount)
                handler.replaceUseCases(fresh)
                handler.metrics.recordReload(succeeded: true)
                logger.info("reloaded", metadata: ["use_cases": "\(fresh.keys.sorted().joined(separator: ","))"])
                return .applied("use cases \(fresh.keys.sorted().joined(separator: ","))")
            } catch {
                handler.metrics.recordReload(succeeded: false)
                logger.error("reload failed; still serving the previous databases", metadata: ["error": "\(error)"])
                return .refused("\(error)")
            }
        }
        try await HTTPServiceRunner.run(server, tls: tls, listen: address, logger: logger, metadata: [
            "use_cases": "\(useCases.keys.sorted().joined(separator: ","))", "privacy_pass": "\(verifier == nil ? "off" : "required")",
        ], reload: reloadDatabases)
    }
}
