import NIOSSL

/// Compiles ``ATSRequirements`` into the TLS client configuration that enforces the
/// handshake's share of them: the lowest version, and the TLS 1.2 cipher suites (TLS 1.3's are
/// all AEAD with ephemeral key exchange, RFC 8446 §1.2).
enum ATSTLSConfiguration {
    /// ECDHE with AEAD: forward secret and authenticated (ATS's list, less its CBC suites).
    static let forwardSecretSuites = [
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305",
    ]
    /// RSA key exchange: allowed once forward secrecy is excepted.
    static let rsaKeyExchangeSuites = ["AES256-GCM-SHA384", "AES128-GCM-SHA256"]
    /// CBC suites, the only ones TLS 1.0 and 1.1 have: allowed when the minimum is lowered.
    static let legacyCBCSuites = ["ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA"]
    static let legacyRSACBCSuites = ["AES128-SHA", "AES256-SHA"]

    static func suites(for requirements: ATSRequirements) -> [String] {
        var suites = forwardSecretSuites
        if !requirements.requiresForwardSecrecy { suites += rsaKeyExchangeSuites }
        if requirements.minimumTLSVersion < .tls12 {
            suites += legacyCBCSuites
            if !requirements.requiresForwardSecrecy { suites += legacyRSACBCSuites }
        }
        return suites
    }

    static func make(_ requirements: ATSRequirements, trust: HTTPTrust, applicationProtocols: [String]) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = tlsVersion(requirements.minimumTLSVersion)
        configuration.cipherSuites = suites(for: requirements).joined(separator: ":")
        configuration.certificateVerification = .fullVerification
        configuration.applicationProtocols = applicationProtocols
        // Closing waits this long for the server's close_notify (swift-nio-ssl's default is 5 s):
        // a connection given up on after a network change has nobody left to answer.
        configuration.shutdownTimeout = .seconds(1)
        switch trust {
        case .system: configuration.trustRoots = .default
        case .certificates(let roots): configuration.trustRoots = .certificates(roots)
        }
        return configuration
    }

    static func tlsVersion(_ version: ATSTLSVersion) -> TLSVersion {
        switch version {
        case .tls10: .tlsv1
        case .tls11: .tlsv11
        case .tls12: .tlsv12
        case .tls13: .tlsv13
        }
    }
}

/// Whom a session trusts to sign servers' certificates.
public enum HTTPTrust: Sendable {
    /// The machine's CA bundle.
    case system
    /// These certificates only (a private or lab CA).
    case certificates([NIOSSLCertificate])

    /// The certificates of a PEM file.
    public static func pemFile(_ path: String) throws(HTTPLoadError) -> HTTPTrust {
        let roots: [NIOSSLCertificate]
        do { roots = try NIOSSLCertificate.fromPEMFile(path) } catch {
            throw .invalidConfiguration("cannot read the CA file \(path): \(TLSErrorText.describe(error))")
        }
        guard !roots.isEmpty else { throw .invalidConfiguration("the CA file \(path) holds no PEM certificate") }
        return .certificates(roots)
    }
}
