import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// Explains a certificate TLS refused: a second handshake that checks nothing, only to read
/// the server's certificate, then says whether it had expired, was not yet valid or came from
/// an issuer the session does not trust. Nothing is sent on that connection after the handshake.
enum CertificateTrustProbe {
    /// `requiredInterface`: the session's, so the probe leaves the way the load did.
    static func explain(
        _ origin: HTTPOrigin, address: SocketAddress?, connectTimeout: TimeAmount, eventLoop: any EventLoop, requiredInterface: String? = nil
    ) async -> String? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        configuration.minimumTLSVersion = .tlsv1
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                InterfaceBinding.bind(channel, to: requiredInterface).flatMapThrowing {
                    let name = IPLiteral(origin.host) == nil ? origin.host : nil
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: name))
                }
            }
        do {
            let channel = try await (address.map { bootstrap.connect(to: $0) } ?? bootstrap.connect(host: origin.host, port: origin.port)).get()
            defer { channel.close(promise: nil) }
            // The certificate is there once the handshake is done; wait for it a little.
            for _ in 0..<50 {
                if let certificate = try await channel.nioSSL_peerCertificate().get() {
                    return describe(try CertificateFacts(der: try certificate.toDERBytes()), host: origin.host)
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
