import HTTPFetching
import Foundation
import NIOCore
import NIOSSL
import Synchronization

/// The TLS an HTTP role serves with: a certificate chain and its private key, read from PEM
/// files; TLS 1.2 and 1.3 only (BoringSSL's default cipher suites, all forward-secret), ALPN
/// `h2` then `http/1.1` (a client that offers neither gets HTTP/1.1). ``reload()`` reads the
/// files again (a renewed certificate): handshakes from then on use the new chain, established
/// connections keep theirs and are not interrupted.
public final class ServerTLS: Sendable {
    /// The PEM files it was read from (and that ``reload()`` reads).
    public let certificateFile: String
    public let keyFile: String
    /// The chain and key in use, shared with the handshake callback of ``configuration``.
    private let current: CertificateSlot
    /// What the server's TLS context is made from: the chain and key first read, and a
    /// callback that hands each handshake the reloaded ones once there are any (swift-nio-ssl's
    /// `sslContextCallback`, run once per ClientHello).
    let configuration: TLSConfiguration

    /// What one reading of the files gave.
    struct Loaded: Sendable {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        /// The leaf certificate's last valid moment.
        let notValidAfter: Date
    }

    /// The chain and key handshakes use; `reloaded` once ``reload()`` has replaced the first.
    final class CertificateSlot: Sendable {
        let state: Mutex<(loaded: Loaded, reloaded: Bool)>
        init(_ loaded: Loaded) { state = Mutex((loaded, false)) }
    }

    /// Reads the chain (leaf first) and its key. Refuses a missing or unreadable file, a file
    /// without a certificate, and a key that does not belong to the leaf, naming the files.
    public init(certificateFile: String, keyFile: String) throws(TLSSetupError) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        let loaded = try Self.load(certificateFile: certificateFile, keyFile: keyFile)
        let slot = CertificateSlot(loaded)
        current = slot
        var configuration = Self.configuration(chain: loaded.chain, key: loaded.key)
        configuration.sslContextCallback = { _, promise in
            let (loaded, reloaded) = slot.state.withLock { $0 }
            guard reloaded else { return promise.succeed(.noChanges) }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = loaded.chain.map { .certificate($0) }
            override.privateKey = .privateKey(loaded.key)
            promise.succeed(override)
        }
        self.configuration = configuration
    }

    /// When the certificate in use stops being valid.
    public var notValidAfter: Date { current.state.withLock { $0.loaded.notValidAfter } }

    /// Reads the files again and serves new handshakes with them. On an error nothing changes:
    /// the previous chain keeps serving.
    public func reload() throws(TLSSetupError) {
        let fresh = try Self.load(certificateFile: certificateFile, keyFile: keyFile)
        current.state.withLock { $0 = (fresh, true) }
    }

    /// A context for a server that speaks only the given protocols in ALPN (the relay: `h2`,
    /// `http/1.1`), with the same chain, key and reloads as this one's. With `clientCAs`, every
    /// client must present a certificate that chains to one of them (mutual TLS; the handshake
    /// fails without one).
    public func makeContext(applicationProtocols: [String], clientCAs: [NIOSSLCertificate] = []) throws -> NIOSSLContext {
        var configuration = configuration
        configuration.applicationProtocols = applicationProtocols
        if !clientCAs.isEmpty {
            // A client has no name to check; its chain is.
            configuration.certificateVerification = .noHostnameVerification
            configuration.trustRoots = .certificates(clientCAs)
        }
        return try NIOSSLContext(configuration: configuration)
    }

    /// What the server offers in ALPN, preferred first (RFC 7301; `h2`: RFC 9113 §3.2).
    static let applicationProtocols = ["h2", "http/1.1"]

    /// TLS 1.2 or later, the given chain and key, ALPN `h2` then `http/1.1`.
    static func configuration(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ServerTLS.applicationProtocols
        return configuration
    }

    private static func load(certificateFile: String, keyFile: String) throws(TLSSetupError) -> Loaded {
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMFile(certificateFile) } catch {
            throw TLSSetupError(description: "cannot read the certificate file \(certificateFile): \(TLSFailure.describe(error))")
        }
        guard let leaf = chain.first else { throw TLSSetupError(description: "the certificate file \(certificateFile) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(file: keyFile, format: .pem) } catch {
            throw TLSSetupError(description: "cannot read the private key file \(keyFile): \(TLSFailure.describe(error))")
        }
        // A context is built here only to check the pair: the key was read above, so failing
        // to load it means BoringSSL found that it does not belong to the leaf certificate.
        do { _ = try NIOSSLContext(configuration: configuration(chain: chain, key: key)) } catch NIOSSLError.failedToLoadPrivateKey {
            throw TLSSetupError(description: "the private key in \(keyFile) does not match the first certificate in \(certificateFile)")
        } catch {
            throw TLSSetupError(description: "cannot use \(certificateFile) with \(keyFile): \(TLSFailure.describe(error))")
        }
        return Loaded(chain: chain, key: key, notValidAfter: Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter)))
    }
}
