import NIOSSL

/// A certificate chain (leaf first) and its private key, presented to a relay that asks for
/// client certificates (`NERelay.identityData`; `netext-server relay --client-ca`).
public struct RelayClientIdentity: Sendable {
    public let chain: [NIOSSLCertificate]
    public let key: NIOSSLPrivateKey

    /// Why PEM text is not an identity.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Reads PEM text holding the certificates (leaf first) and the private key, in any order.
    /// Refused, saying what is missing or wrong: no certificate, no key, or a key that does not
    /// belong to the leaf.
    public init(pem: String) throws(Failure) {
        let bytes = Array(pem.utf8)
        guard let chain = try? NIOSSLCertificate.fromPEMBytes(bytes), let leaf = chain.first else {
            throw Failure(description: "it holds no PEM certificate")
        }
        guard let block = Self.keyBlock(pem), let key = try? NIOSSLPrivateKey(bytes: Array(block.utf8), format: .pem) else {
            throw Failure(description: "it holds no PEM private key (unencrypted)")
        }
        // BoringSSL refuses to load a key that does not belong to the leaf.
        var check = TLSConfiguration.makeClientConfiguration()
        check.certificateChain = [.certificate(leaf)]
        check.privateKey = .privateKey(key)
        do { _ = try NIOSSLContext(configuration: check) } catch {
            throw Failure(description: "its private key does not belong to its first certificate")
        }
        self.chain = chain
        self.key = key
    }

    /// The private key's PEM block (`PRIVATE KEY`, `EC PRIVATE KEY` or `RSA PRIVATE KEY`).
    private static func keyBlock(_ pem: String) -> String? {
        for kind in ["PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY"] {
            let begin = "-----BEGIN \(kind)-----", end = "-----END \(kind)-----"
            guard let start = pem.range(of: begin), let stop = pem.range(of: end, range: start.upperBound..<pem.endIndex) else { continue }
            return String(pem[start.lowerBound..<stop.upperBound]) + "\n"
        }
        return nil
    }
}
