import ArgumentParser
import Dispatch
import Foundation
import Logging
import NetExtLinux
import PIRService

/// `netext-server pir`: serves the PIR databases a build wrote.
struct PIRCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pir",
        abstract: "Serve private information retrieval for the URL filter (docs/pir-protocol.md).",
        discussion: "POST /config, /key, /queries (protobuf); GET /metrics. SIGHUP reloads the databases; SIGTERM/SIGINT stop. Query contents are never logged.")

    @Option(help: "A directory written by 'netext-urlfilter-db build'.") var database: String
    @Option(help: "Address and port to listen on, e.g. 127.0.0.1:8080.") var listen: String
    @Option(help: "Threads per query.") var threads = ProcessInfo.processInfo.activeProcessorCount
    @Option(help: "Evaluation keys kept (least recently used dropped first).") var keyCapacity = 256
    @Option(help: "Log level.") var logLevel = "info"

    func run() async throws {
        bootstrapStandardErrorLogging(level: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "netext-server.pir")
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("--listen must be HOST:PORT, got \(listen)")
        }
        let host = String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let useCases: [String: PIRUseCase]
        do throws(PIRServiceError) { useCases = try PIRDatabaseDirectory.load(root: database, threads: threads) } catch {
            FileHandle.standardError.write(Data("netext-server: \(error)\n".utf8))
            throw ExitCode(3)
        }
        let handler = PIRRequestHandler(useCases: useCases, keyCapacity: keyCapacity)
        let server = PIRHTTPServer(handler: handler, logger: logger)
        let (channel, boundPort) = try await server.start(host: host, port: port)
        logger.info("serving", metadata: ["listen": "\(host):\(boundPort)", "use_cases": "\(useCases.keys.sorted().joined(separator: ","))"])
        // SIGHUP: reload from disk; keep serving the old databases when the new ones fail to load.
        signal(SIGHUP, SIG_IGN)
        let reload = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: "netext.pir.reload"))
        let databaseRoot = database, threadCount = threads
        reload.setEventHandler {
            do throws(PIRServiceError) {
                let fresh = try PIRDatabaseDirectory.load(root: databaseRoot, threads: threadCount)
                handler.replaceUseCases(fresh)
                handler.metrics.recordReload(succeeded: true)
                logger.info("reloaded", metadata: ["use_cases": "\(fresh.keys.sorted().joined(separator: ","))"])
            } catch {
                handler.metrics.recordReload(succeeded: false)
                logger.error("reload failed; still serving the previous databases", metadata: ["error": "\(error)"])
            }
        }
        reload.resume()
        let signalName = await TerminationSignals.wait()
        logger.info("shutting down", metadata: ["signal": "\(signalName)"])
        reload.cancel()
        try? await channel.close()
        await server.shutdown()
    }
}
