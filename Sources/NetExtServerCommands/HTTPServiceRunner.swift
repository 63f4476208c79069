import ArgumentParser
import Foundation
import HTTPServing
import Logging
import NetExtLinux

/// Runs one HTTP role of netext-server until SIGTERM/SIGINT: binds `--listen`, logs the bound
/// address, calls `every` (key rotation, directory refresh) on its interval, and shuts down
/// cleanly.
enum HTTPServiceRunner {
    static func parseListen(_ text: String) throws -> ListenAddress {
        guard let address = ListenAddress(parsing: text) else { throw ValidationError("--listen must be HOST:PORT, got \(text)") }
        return address
    }

    static func run(
        _ responder: any HTTPResponder, listen: ListenAddress, limits: HTTPServerLimits, logger: Logger, metadata: Logger.Metadata = [:],
        every interval: Duration? = nil, _ periodic: (@Sendable () async -> Void)? = nil
    ) async throws {
        let server = HTTPServer(responder: responder, logger: logger, limits: limits)
        let (channel, port) = try await server.start(listen)
        logger.info("serving", metadata: metadata.merging(["listen": "\(ListenAddress(host: listen.host, port: port))"]) { a, _ in a })
        let timer: Task<Void, Never>? = interval.flatMap { interval in
            periodic.map { work in
                Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        if Task.isCancelled { break }
                        await work()
                    }
                }
            }
        }
        let signalName = await TerminationSignals.wait()
        logger.info("shutting down", metadata: ["signal": "\(signalName)"])
        timer?.cancel()
        try? await channel.close()
        await server.shutdown()
    }

    /// Prints a startup failure the way every netext-server role does, and exits 3.
    static func fail(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("netext-server: \(message)\n".utf8))
        return ExitCode(3)
    }
}
