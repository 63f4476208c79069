import Foundation
import NIOSSL

/// Whom an encrypted upstream trusts: the system's CAs, or the certificates of one PEM file (a
/// lab's or a test's CA). Either way TLS 1.2 or later (RFC 8310 §9 and RFC 8484 §5 ask for TLS
/// 1.2 at least), the chain checked and the name (or address) checked against the server's.
public struct DNSServerTrust: Sendable, Hashable {
    /// A PEM file of the only CAs trusted; nil: the system's.
    public var caFile: String?
    /// A PEM file with the client's certificate (its chain after it) and private key, sent when
    /// the server asks; it must be readable by its owner alone. Nil: none.
    public var clientIdentityFile: String?

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
        if let identity = clientIdentityFile {
            try Self.loadIdentity(identity, into: &configuration)
        }
        return configuration
    }

    /// The certificate chain and key of `path`, refused if others than its owner may read it.
    private static func loadIdentity(_ path: String, into configuration: inout TLSConfiguration) throws(EncryptedDNSError) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw .unusableClientIdentity(path: path, reason: String(cString: strerror(errno)))
        }
        guard status.st_mode & 0o077 == 0 else {
            throw .unusableClientIdentity(path: path, reason: "its group or others may read it (mode \(String(status.st_mode & 0o777, radix: 8))); it holds a private key: chmod 600")
        }
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMFile(path) } catch {
            throw .unusableClientIdentity(path: path, reason: "its certificates cannot be read: \(FailureText.reason(error))")
        }
        guard !chain.isEmpty else { throw .unusableClientIdentity(path: path, reason: "it holds no certificate") }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(file: path, format: .pem) } catch {
            throw .unusableClientIdentity(path: path, reason: "its private key cannot be read: \(FailureText.reason(error))")
        }
        configuration.certificateChain = chain.map { .certificate($0) }
        configuration.privateKey = .privateKey(key)
    }
}
