import ArgumentParser
import CommandLogging
import CoreMetrics
import DaemonLifecycle
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import NetExtTunnel
import ServiceMetrics
import TunnelProtocol

struct TunnelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnel",
        abstract: "Run the NetExt tunnel server, or show a running one's peers (docs/tunnel-server.md).",
        subcommands: [TunnelRunCommand.self, TunnelShowCommand.self],
        defaultSubcommand: TunnelRunCommand.self)
}

struct TunnelRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the NetExt tunnel server (the default: `netext-server tunnel --config FILE`).",
        discussion: "Runs in the foreground until SIGTERM or SIGINT (under systemd, Type=notify: ready once it listens); logs to standard error, never keys or payloads. SIGHUP reads the configuration file again and applies its peers live: added, removed and changed peers take effect, every other client keeps its session (a file that changes anything else is refused and the server keeps running as it was).")

    @Option(help: "The server's configuration file (JSON).") var config: String
    @Option(help: "The local socket `netext-server tunnel show` reads the peers from (default: /run/netext-server/tunnel-PORT.sock; 'none' for no socket).")
    var statusSocket: String?
    @Option(help: "Serve Prometheus metrics (per-peer transfer and handshakes, drops by reason, handshake times) at http://HOST:PORT/metrics; loopback addresses only.")
    var metricsListen: String?
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if let metricsListen {
            do throws(MetricsListenerError) { _ = try MetricsListener.parse(metricsListen) } catch { throw ValidationError(error.message) }
        }
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "netext-server.tunnel")
        let configuration: TunnelServerConfiguration
        let server: TunnelServer
        let exporter = PrometheusExporter(descriptions: TunnelServerMetrics.descriptions)
        do throws(NetExtError) {
            configuration = try TunnelServerConfiguration.load(path: config)
            server = try TunnelServer(
                configuration: configuration, logger: logger,
                metrics: TunnelServerMetrics(factory: metricsListen == nil ? NOOPMetricsHandler.instance : exporter))
        } catch {
            FileHandle.standardError.write(Data("netext-server: \(error.message)\n".utf8))
            throw ExitCode(3)
        }
        let failure = ServerFailure()
        let path = config
        let statusSocket = self.statusSocket
        var metricsListener: MetricsListener?
        if let metricsListen {
            exporter.addCollector { server.metrics.collect(server.status()) }
            do {
                let listener = try await MetricsListener.start(try MetricsListener.parse(metricsListen), exporter: exporter, logger: logger)
                logger.info("metrics endpoint ready", metadata: ["listen": "\(listener.address)"])
                metricsListener = listener
            } catch {
                FileHandle.standardError.write(Data("netext-server: \(error)\n".utf8))
                throw ExitCode(3)
            }
        }
        let metricsEndpoint = metricsListener
        try await ProcessLifecycle(logger: logger).run(reload: {
            do throws(NetExtError) {
                let report = try server.reload(try TunnelServerConfiguration.load(path: path))
                logger.notice("configuration reloaded", metadata: [
                    "added": "\(report.added.joined(separator: ","))", "removed": "\(report.removed.joined(separator: ","))",
                    "reset": "\(report.reset.joined(separator: ","))", "kept": "\(report.kept)",
                ])
                return .applied("\(report.added.count) peers added, \(report.removed.count) removed, \(report.reset.count) changed, \(report.kept) kept")
            } catch {
                logger.error("reload refused; still serving the previous configuration", metadata: ["reason": "\(error.message)"])
                return .refused(error.message)
            }
        }) { context in
            let finished = DispatchSemaphore(value: 0)
            let thread = Thread {
                do throws(NetExtError) { try server.run() } catch {
                    failure.set(error)
                    // Wake the shutdown wait so the process exits with the error.
                    kill(getpid(), SIGTERM)
                }
                finished.signal()
            }
            thread.start()
            let status = Self.openStatusSocket(statusSocket, for: server, listen: configuration.listen, logger: logger)
            defer { status?.close() }
            context.ready("serving \(configuration.peers.count) peers on \(configuration.listen)")
            await context.untilShutdown()
            server.stop()
            // Exit only once the server has finished: its loops wake at least every 250 ms, then it
            // removes its forwarding (nftables table, sysctls). A fixed pause was too short on a
            // loaded machine and left the table behind. Bounded: 10 s, waited off the task pool.
            let stoppedInTime = await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: finished.wait(timeout: .now() + 10) == .success) }.start()
            }
            if !stoppedInTime { logger.error("the server did not stop within 10 s; exiting anyway (its forwarding rules may be left)") }
            await metricsEndpoint?.stop()
        }
        if let error = failure.get() {
            FileHandle.standardError.write(Data("netext-server: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

extension TunnelRunCommand {
    /// The status socket, unless turned off; a server that cannot open it still serves (and says
    /// why `show` will not reach it).
    static func openStatusSocket(_ statusSocket: String?, for server: TunnelServer, listen: String, logger: Logger) -> TunnelServerStatusSocket? {
        guard statusSocket != "none" else { return nil }
        // The configured port names the default socket (the file was checked: it parses).
        let path = statusSocket ?? TunnelServerStatusSocket.defaultPath(port: SocketAddress(listen)?.port ?? 0)
        do throws(SystemError) {
            let socket = try TunnelServerStatusSocket(path: path, server: server, logger: logger)
            logger.info("status socket ready", metadata: ["path": "\(path)"])
            return socket
        } catch {
            logger.warning("no status socket; netext-server tunnel show cannot reach this server", metadata: ["path": "\(path)", "reason": "\(error)"])
            return nil
        }
    }
}

struct TunnelShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a running tunnel server's peers: endpoints, latest handshakes, transfer (like `wg show`).",
        discussion: "Reads the server's status socket; root and the server's own user may read it.")

    @Option(help: "The server's status socket (default: /run/netext-server/tunnel-PORT.sock).") var statusSocket: String?
    @Option(help: "The port the server listens on, to find its default status socket.") var port: UInt16 = 51900
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let path = statusSocket ?? TunnelServerStatusSocket.defaultPath(port: port)
        let status: TunnelServerStatus
        do throws(NetExtError) { status = try TunnelServerStatusSocket.read(path: path) } catch {
            FileHandle.standardError.write(Data("netext-server: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
        if json {
            print(String(decoding: try TunnelServerStatusSocket.encoder(pretty: true).encode(status), as: UTF8.self))
        } else {
            print(TunnelServerStatusText.render(status, now: Date()))
        }
    }
}
