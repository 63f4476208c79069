import NIOSSL

/// Whom a client trusts for HTTPS: the machine's CA bundle, or the certificates of one PEM file
/// (a private CA, as labs and self-run deployments use). TLS 1.2 or later; the server's name or
/// IP address must match its certificate.
public struct ClientTLS: Sendable {
    /// What HTTPS connections are set up with (AsyncHTTPClient offers ALPN `h2` and
    /// `http/1.1` on top of it and checks the server's name or IP address).
    let configuration: TLSConfiguration

    /// The certificates in `caFile` (PEM) and nothing else.
    public init(caFile: String) throws(TLSSetupError) {
        let roots: [NIOSSLCertificate]
        do { roots = try NIOSSLCertificate.fromPEMFile(caFile) } catch {
            throw TLSSetupError(description: "cannot read the CA file \(caFile): \(TLSFailure.describe(error))")
        }
        guard !roots.isEmpty else { throw TLSSetupError(description: "the CA file \(caFile) holds no PEM certificate") }
        configuration = Self.configuration(trusting: .certificates(roots))
        // Built once here so that an unusable CA file is refused when the role starts, naming
        // the file, rather than at the first request.
        do { _ = try NIOSSLContext(configuration: configuration) } catch {
            throw TLSSetupError(description: "cannot set up TLS with \(caFile): \(TLSFailure.describe(error))")
        }
    }

    /// TLS 1.2 or later, the certificate chain and name checked against `roots`.
    static func configuration(trusting roots: NIOSSLTrustRoots) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.trustRoots = roots
        configuration.certificateVerification = .fullVerification
        return configuration
    }
}
