import Foundation

/// The server's side of a TLS connection as the session evaluated it (what a `SecTrust` carries
/// in Foundation's `NSURLAuthenticationMethodServerTrust` challenge): the host, the certificates
/// the server presented, and what default evaluation — the session's trust roots, validity
/// dates, the host name — found.
///
/// A delegate can tighten (refuse a server default evaluation trusts: its own pinning) or loosen
/// (accept one it does not: a self-signed lab server) with `URLCredential(trust:)`. Loosening
/// needs App Transport Security's `NSExceptionAllowsInsecureHTTPLoads` for the domain (or
/// `NSAllowsArbitraryLoads`), as on Apple platforms; ATS's other rules still apply.
public struct ServerTrust: Sendable, Hashable, Codable {
    /// The host the load named.
    public var host: String
    /// The certificates, DER, the leaf first: every one the server presented when default
    /// evaluation refused the chain; the leaf alone when it trusted it.
    public var certificates: [Data]
    /// Why default evaluation refused the server ("the server's certificate expired on …"); nil
    /// when it trusted it.
    public var evaluationFailure: String?

    public init(host: String, certificates: [Data], evaluationFailure: String?) {
        self.host = host
        self.certificates = certificates
        self.evaluationFailure = evaluationFailure
    }

    /// Whether default evaluation trusted the server.
    public var isTrusted: Bool { evaluationFailure == nil }

    /// The leaf certificate as ATS reads it (its key, signature, SPKI hash, names, dates).
    public var leaf: CertificateFacts? {
        guard let first = certificates.first else { return nil }
        return try? CertificateFacts(der: [UInt8](first))
    }
}
