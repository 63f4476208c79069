import ArgumentParser
import CommandLogging
import DaemonLifecycle
import Foundation
import HTTPServing
import Logging
import MASQUERelay
import NetExtCore

/// `netext-server relay`: a MASQUE relay over HTTP/2 with TLS — CONNECT for TCP (RFC 9113 §8.5)
/// and connect-udp with HTTP Datagrams in capsules (RFC 9298, RFC 9297).
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Relay TCP (CONNECT) and UDP (connect-udp) flows to allowed targets over HTTP/2 with TLS (MASQUE).",
        discussion: """
            Only targets inside an --allow prefix are reached (none by default: no open proxy); a request for another \
            gets 403, a request without one of the --token-file's bearer tokens 407 (when the file is given). TLS offers \
            ALPN h2 only. SIGHUP reads the TLS certificate again. Logs say why a request was refused, never its bytes.
            """)

    @Option(help: "Address and port to listen on, e.g. 0.0.0.0:8443 or [::]:8443.") var listen: String
    @Option(help: "The relay's certificate chain (PEM, leaf first).") var certificate: String
    @Option(help: "The certificate's private key (PEM).") var key: String
    @Option(help: "A destination prefix the relay may reach (repeat for more), e.g. 10.20.0.0/16.") var allow: [String] = []
    @Option(help: "A file of bearer tokens, one a line; clients must send one (Proxy-Authorization: Bearer …).") var tokenFile: String?
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "netext-server.relay")
        guard let address = ListenAddress(parsing: listen) else { throw ValidationError("--listen must be ADDRESS:PORT, got \(listen)") }
        let (host, port) = (address.host, address.port)
        var prefixes: [IPPrefix] = []
        for text in allow {
            do { prefixes.append(try IPPrefix(text, allowHostBits: false)) } catch { throw ValidationError("--allow \(text): \(error)") }
        }
        var tokens: [String] = []
        if let tokenFile {
            guard let text = try? String(contentsOfFile: tokenFile, encoding: .utf8) else { throw ValidationError("--token-file \(tokenFile) cannot be read") }
            tokens = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
            guard !tokens.isEmpty else { throw ValidationError("--token-file \(tokenFile) holds no token") }
        }
        if prefixes.isEmpty { logger.warning("relay: no --allow prefix; every target will be refused") }
        let tls = try ServerTLS(certificateFile: certificate, keyFile: key)
        let policy = RelayPolicy(allowedTargets: prefixes, bearerTokens: tokens)
        let allowed = prefixes.map(\.description)
        try await ProcessLifecycle(logger: logger).run(reload: {
            do {
                try tls.reload()
                return .applied("TLS certificate read again")
            } catch { return .refused("\(error)") }
        }) { context in
            let server = try await RelayServer.start(host: host, port: port, tls: tls, policy: policy, logger: logger)
            logger.notice("relay listening", metadata: ["listen": "\(host):\(server.port)", "allowed": "\(allowed)"])
            context.ready("relaying on \(host):\(server.port)")
            await context.untilShutdown()
            await server.stop()
        }
    }
}
