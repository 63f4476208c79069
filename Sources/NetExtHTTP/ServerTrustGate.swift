import Foundation
import NIOCore

/// Opening a TLS connection with the session's delegate judging the server
/// (`NSURLAuthenticationMethodServerTrust`): default evaluation first; a server it trusts is
/// shown to the delegate, which may refuse it; for one it refuses, the certificates the server
/// presents are read by a second handshake (``CertificateTrustProbe``) and the delegate may accept
/// exactly that leaf — where ATS lets the domain loosen trust.
enum ServerTrustGate {
    /// The connection, and the leaf the delegate accepted where default evaluation did not (nil
    /// when default evaluation decided). `open` makes a connection, trusting only the leaf it is
    /// given when it is given one.
    static func open(
        origin: HTTPOrigin, requirements: ATSRequirements, judge: ServerTrustJudge, address: SocketAddress?, connectTimeout: TimeAmount,
        eventLoop: any EventLoop, requiredInterface: String?, open: @Sendable ([UInt8]?) async throws -> HTTPConnection
    ) async throws -> (HTTPConnection, accepted: [UInt8]?) {
        let connection: HTTPConnection
        do {
            connection = try await open(nil)
        } catch HTTPLoadError.tlsFailed(let host, let reason) where reason == TLSErrorText.untrustedCertificate {
            // BoringSSL says only that verification failed: find out why, and ask the delegate.
            guard let finding = await CertificateTrustProbe.inspect(
                origin, address: address, connectTimeout: connectTimeout, eventLoop: eventLoop, requiredInterface: requiredInterface)
            else { throw HTTPLoadError.tlsFailed(host: host, reason: reason) }
            let trust = ServerTrust(host: origin.host, certificates: finding.certificates, evaluationFailure: finding.explanation)
            switch await judge.verdict(on: trust, for: origin) {
            case .cancel:
                throw HTTPLoadError.cancelled
            case .accept(let accepted) where accepted.certificates.first == finding.certificates.first:
                // Loosening trust is ATS's to allow (Apple: NSExceptionAllowsInsecureHTTPLoads).
                guard requirements.allowsInsecureHTTP else {
                    throw HTTPLoadError.refused(ATSRefusal(
                        rule: .serverTrust, detail: "the session's delegate accepted a certificate default evaluation refuses (\(finding.explanation))",
                        domain: requirements.domain, source: requirements.source))
                }
                let leaf = [UInt8](finding.certificates[0])
                return (try await open(leaf), leaf)
            case .accept, .defaultHandling:
                throw HTTPLoadError.tlsFailed(host: host, reason: finding.explanation)
            }
        }
        // Trusted by default: the delegate may still refuse it (its own pinning).
        if origin.isSecure, let leaf = connection.facts.certificateDER, await judge.refuses(trustedLeaf: leaf, for: origin) {
            connection.close()
            throw HTTPLoadError.cancelled
        }
        return (connection, nil)
    }
}
