import Foundation
import NIOSSL

/// Whom an encrypted upstream trusts: the system's CAs, or the certificates of one PEM file (a
/// lab's or a test's CA). Either way TLS 1.2 or later (RFC 8310 §9 and RFC 8484 §5 ask for TLS
/// 1.2 at least), the chain checked and the name (or address) checked against the server's.
public struct DNSServerTrust: Sendable, Hashable {
    /// A PEM file of the only CAs trusted; nil: the system's.
    public var caFile: String?

    /// The system's CAs (`/etc/ssl/certs`).
    public static let system = DNSServerTrust(caFile: nil)

    public init(caFile: String?) {
        self.caFile = caFile
    }

    /// The client TLS configuration, with `applicationProtocols` for ALPN (`h2` for DoH; none
    /// for DoT, RFC 7858 §3.1 has no ALPN identifier).
    func configuration(applicationProtocols: [String] = []) throws(EncryptedDNSError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .fullVerification
        configuration.applicationProtocols = applicationProtocols
        if let caFile {
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw .unusableCAFile(path: caFile, reason: "it is missing, or this user (uid \(getuid())) may not read it")
            }
            do { configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) } catch {
                throw .unusableCAFile(path: caFile, reason: FailureText.reason(error))
            }
        }
        return configuration
    }
}
