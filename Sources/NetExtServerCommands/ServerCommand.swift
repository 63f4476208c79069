import ArgumentParser
import Dispatch
import CommandLogging
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import NetExtTunnel
import TunnelProtocol

/// `netext-server`: the server side of NetExt's features, one subcommand per role.
public struct ServerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "netext-server",
        abstract: "NetExt's servers: the tunnel server, the URL filter's PIR server, Privacy Pass issuer and Oblivious HTTP gateway and relay, and key tools.",
        version: "0.1.0",
        subcommands: [
            TunnelCommand.self, PIRCommand.self, IssuerCommand.self, ObliviousGatewayCommand.self, ObliviousRelayCommand.self,
            GenerateKeyCommand.self, PublicKeyCommand.self,
        ])

    public init() {}
}

struct TunnelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel",
        abstract: "Run the NetExt tunnel server (docs/tunnel-server.md).",
        discussion: "Runs in the foreground until SIGTERM or SIGINT; logs to standard error, never keys or payloads. SIGHUP reads the configuration file again and applies its peers live: added, removed and changed peers take effect, every other client keeps its session (a file that changes anything else is refused and the server keeps running as it was).")

    @Option(help: "The server's configuration file (JSON).") var config: String
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        signal(SIGHUP, SIG_IGN)  // until the reload handler is in place
        logging.bootstrap()
        let logger = Logger(label: "netext-server.tunnel")
        let server: TunnelServer
        do throws(NetExtError) {
            server = try TunnelServer(configuration: try TunnelServerConfiguration.load(path: config), logger: logger)
        } catch {
            FileHandle.standardError.write(Data("netext-server: \(error.message)\n".utf8))
            throw ExitCode(3)
        }
        let failure = ServerFailure()
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            do throws(NetExtError) { try server.run() } catch {
                failure.set(error)
                // Wake the signal wait so the process exits with the error.
                kill(getpid(), SIGTERM)
            }
            finished.signal()
        }
        thread.start()
        let path = config
        let reloads = ReloadSignal.handle(label: "netext.tunnel.reload") {
            do throws(NetExtError) {
                let report = try server.reload(try TunnelServerConfiguration.load(path: path))
                logger.notice("configuration reloaded", metadata: [
                    "added": "\(report.added.joined(separator: ","))", "removed": "\(report.removed.joined(separator: ","))",
                    "reset": "\(report.reset.joined(separator: ","))", "kept": "\(report.kept)",
                ])
            } catch {
                logger.error("reload refused; still serving the previous configuration", metadata: ["reason": "\(error.message)"])
            }
        }
        defer { reloads.cancel() }
        let signalName = await TerminationSignals.wait()
        logger.info("shutting down", metadata: ["signal": "\(signalName)"])
        server.stop()
        // Exit only once the server has finished: its loops wake at least every 250 ms, then it
        // removes its forwarding (nftables table, sysctls). A fixed pause was too short on a
        // loaded machine and left the table behind. Bounded: 10 s, waited off the task pool.
        let stoppedInTime = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: finished.wait(timeout: .now() + 10) == .success) }.start()
        }
        if !stoppedInTime { logger.error("the server did not stop within 10 s; exiting anyway (its forwarding rules may be left)") }
        if let error = failure.get() {
            FileHandle.standardError.write(Data("netext-server: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// The error a server thread ended with, if any.
final class ServerFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var error: NetExtError?
    func set(_ error: NetExtError) { lock.lock(); self.error = error; lock.unlock() }
    func get() -> NetExtError? { lock.lock(); defer { lock.unlock() }; return error }
}

struct GenerateKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "genkey", abstract: "Print a new private key (base64).")
    func run() { print(TunnelKeys.base64(TunnelKeys.generatePrivateKey())) }
}

struct PublicKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pubkey", abstract: "Read a private key on standard input; print its public key.")
    func run() throws {
        guard let line = readLine(), let key = try? TunnelKeys.privateKey(base64: line) else {
            FileHandle.standardError.write(Data("netext-server: standard input must hold a 32-byte base64 private key\n".utf8))
            throw ExitCode(3)
        }
        print(TunnelKeys.base64(key.publicKey))
    }
}
