import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Explains a certificate TLS refused: a second handshake that trusts anything, only to read the
/// certificates the server presents, then says whether the leaf had expired, was not yet valid
/// or came from an issuer the session does not trust. Nothing is sent on that connection after
/// the handshake.
enum CertificateTrustProbe {
    /// What the second handshake saw: the presented certificates (DER, leaf first) and why
    /// default evaluation would refuse them.
    struct Finding: Sendable {
        var certificates: [Data]
        var explanation: String
    }

    /// `requiredInterface`: the session's, so the probe leaves the way the load did. Nil when no
    /// handshake could be made.
    static func inspect(
        _ origin: HTTPOrigin, address: SocketAddress?, connectTimeout: TimeAmount, eventLoop: any EventLoop, requiredInterface: String? = nil
    ) async -> Finding? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        // Verification on, so that the callback below is called; it trusts anything.
        configuration.certificateVerification = .noHostnameVerification
        configuration.minimumTLSVersion = .tlsv1
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        let presented = Mutex<[Data]?>(nil)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                InterfaceBinding.bind(channel, to: requiredInterface).flatMapThrowing {
                    let name = IPLiteral(origin.host) == nil ? origin.host : nil
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: name) { certificates, verdict in
                        let chain = certificates.compactMap { try? Data($0.toDERBytes()) }
                        presented.withLock { $0 = chain }
                        verdict.succeed(.certificateVerified)
                    })
                }
            }
        do {
            let channel = try await (address.map { bootstrap.connect(to: $0) } ?? bootstrap.connect(host: origin.host, port: origin.port)).get()
            defer { channel.close(promise: nil) }
            // The certificates are there once the server's have been read; wait for them a little.
            for _ in 0..<50 {
                if let certificates = presented.withLock({ $0 }), let leaf = certificates.first {
                    return Finding(certificates: certificates, explanation: describe(try CertificateFacts(der: [UInt8](leaf)), host: origin.host))
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        } catch {}
        return nil
    }

    static func describe(_ facts: CertificateFacts, host: String, now: Date = Date()) -> String {
        let formatter = ISO8601DateFormatter()
        if facts.notAfter < now { return "the server's certificate expired on \(formatter.string(from: facts.notAfter))" }
        if facts.notBefore > now { return "the server's certificate is not valid until \(formatter.string(from: facts.notBefore))" }
        let issuer = facts.issuerCommonName.map { "'\($0)'" } ?? "its issuer"
        return "the server's certificate (for \(facts.commonName.map { "'\($0)'" } ?? "?")) is signed by \(issuer), whom this session does not trust, or is not for \(host)"
    }
}
