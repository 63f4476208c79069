import ArgumentParser
import HTTPServing

/// What every HTTP role of netext-server takes about how it serves: TLS, and connection limits
/// (`HTTPServerLimits`).
struct HTTPServingOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "PEM file of the certificate chain to serve TLS with (leaf first); needs --tls-key.",
        discussion: "Without it the role serves plain HTTP: meant for loopback or behind a TLS-terminating proxy."))
    var tlsCertificate: String?
    @Option(help: "PEM file of the private key of --tls-certificate (keep it 0600).")
    var tlsKey: String?
    @Flag(help: ArgumentHelp(
        "Serve plain HTTP on a --listen address beyond loopback.",
        discussion: "Without a certificate a role listens on loopback only (behind a TLS-terminating proxy); this flag is for labs."))
    var insecureHTTP = false
    @Option(help: "Connections held at once; more are closed as soon as they are accepted.")
    var maxConnections = HTTPServerLimits().maximumConnections
    @Option(help: ArgumentHelp(
        "Connections one source (an IPv4 address or an IPv6 /64) may hold at once.",
        discussion: "Raise it to --max-connections for a role whose clients all come through one peer (a gateway behind a relay)."))
    var maxConnectionsPerSource = HTTPServerLimits().maximumConnectionsPerSource

    func validate() throws {
        guard (1...1_000_000).contains(maxConnections) else { throw ValidationError("--max-connections must be 1 to 1000000, got \(maxConnections)") }
        guard (1...maxConnections).contains(maxConnectionsPerSource) else {
            throw ValidationError("--max-connections-per-source must be 1 to --max-connections (\(maxConnections)), got \(maxConnectionsPerSource)")
        }
        guard (tlsCertificate == nil) == (tlsKey == nil) else { throw ValidationError("--tls-certificate and --tls-key go together") }
    }

    var limits: HTTPServerLimits {
        var limits = HTTPServerLimits()
        limits.maximumConnections = maxConnections
        limits.maximumConnectionsPerSource = maxConnectionsPerSource
        return limits
    }

    /// The TLS to serve with, read from the files; nil without --tls-certificate.
    func serverTLS() throws(TLSSetupError) -> ServerTLS? {
        guard let tlsCertificate, let tlsKey else { return nil }
        return try ServerTLS(certificateFile: tlsCertificate, keyFile: tlsKey)
    }
}

/// The trust a role's own requests to other servers use (`--upstream-ca`).
struct UpstreamTrustOptions: ParsableArguments {
    @Option(help: "PEM file of the CA certificates that https upstreams must chain to (default: the system's trust store).")
    var upstreamCA: String?

    /// The trust to use; nil means the system's.
    func clientTLS() throws(TLSSetupError) -> ClientTLS? {
        guard let upstreamCA else { return nil }
        return try ClientTLS(caFile: upstreamCA)
    }
}
