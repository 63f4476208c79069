/// The App Transport Security rules a load can break, each with the exception that lifts it.
public enum ATSRule: String, Sendable, Hashable, CaseIterable {
    case cleartextHTTP = "cleartext HTTP"
    case tlsVersion = "TLS version"
    case forwardSecrecy = "forward secrecy"
    case keySize = "key size"
    case signatureHash = "signature hash"
    case certificateTransparency = "certificate transparency"
    case pinning = "pinned identity"
    /// A certificate default evaluation refuses, accepted by the session's delegate.
    case serverTrust = "server trust"

    /// What an app adds to its `NSAppTransportSecurity` dictionary to lift the rule for `domain`.
    public func remedy(domain: String) -> String {
        let entry = "NSExceptionDomains › \(domain)"
        switch self {
        case .cleartextHTTP: return "use https, or add \(entry) › NSExceptionAllowsInsecureHTTPLoads = true"
        case .tlsVersion: return "upgrade the server to TLS 1.2, or add \(entry) › NSExceptionMinimumTLSVersion = TLSv1.0 (or TLSv1.1)"
        case .forwardSecrecy: return "enable ECDHE cipher suites on the server, or add \(entry) › NSExceptionRequiresForwardSecrecy = false"
        case .keySize, .signatureHash:
            return "reissue the certificate (RSA 2048+ or ECC 256+ bits, signed with SHA-256 or better), or add \(entry) › NSExceptionAllowsInsecureHTTPLoads = true"
        case .certificateTransparency: return "have the certificate logged with SCTs embedded, or remove \(entry) › NSRequiresCertificateTransparency"
        case .pinning: return "check which key the server presents against NSPinnedDomains › \(domain)"
        case .serverTrust:
            return "have the server's certificate issued by a CA the session trusts, or add \(entry) › NSExceptionAllowsInsecureHTTPLoads = true to let the delegate accept it"
        }
    }
}

/// A load App Transport Security did not allow: which rule, what was seen, and how to except it.
public struct ATSRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public var rule: ATSRule
    /// What broke it: "the server's certificate has an RSA 1024-bit key (2048 or more required)".
    public var detail: String
    /// The domain the advice names.
    public var domain: String
    /// The policy entry that governed the load ("default", "NSExceptionDomains › …").
    public var source: String

    public var description: String {
        "App Transport Security refused the load (rule: \(rule.rawValue), policy: \(source)): \(detail). To allow it, \(rule.remedy(domain: domain))."
    }
}
