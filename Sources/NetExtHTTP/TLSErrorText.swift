import NIOCore
import NIOPosix
import NIOSSL

/// Turns a failed connection or handshake into an ``HTTPLoadError``: a handshake that found no
/// TLS version or cipher suite in common is the ATS rule that narrowed them; the rest are TLS
/// failures, in words.
enum TLSErrorText {
    static func loadError(_ error: any Error, host: String, requirements: ATSRequirements) -> HTTPLoadError {
        if let loadError = error as? HTTPLoadError { return loadError }
        let text = String(describing: error)
        func refused(_ rule: ATSRule, _ detail: String) -> HTTPLoadError {
            .refused(ATSRefusal(rule: rule, detail: detail, domain: requirements.domain, source: requirements.source))
        }
        if ["UNSUPPORTED_PROTOCOL", "PROTOCOL_VERSION", "TLSV1_ALERT_PROTOCOL_VERSION"].contains(where: text.contains), requirements.minimumTLSVersion > .tls10 {
            return refused(.tlsVersion, "the server offers no TLS version from \(requirements.minimumTLSVersion.rawValue) up")
        }
        if ["HANDSHAKE_FAILURE", "NO_SHARED_CIPHER", "NO_CIPHER_MATCH", "INSUFFICIENT_SECURITY"].contains(where: text.contains), requirements.requiresForwardSecrecy {
            return refused(.forwardSecrecy, "the server offers no forward-secret (ECDHE) AEAD cipher suite")
        }
        if error is HandshakeClosed { return .tlsFailed(host: host, reason: "the server closed the connection during the handshake") }
        return .tlsFailed(host: host, reason: describe(error))
    }

    static let untrustedCertificate = "the certificate is not signed by a trusted authority, or is outside its validity period"

    /// A TLS failure as a sentence (BoringSSL's error queue is not for people).
    static func describe(_ error: any Error) -> String {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "the certificate is not for this host name"
        }
        let text = String(describing: error)
        let known: [(String, String)] = [
            ("CERTIFICATE_VERIFY_FAILED", untrustedCertificate),
            ("WRONG_VERSION_NUMBER", "the server does not speak TLS"),
            ("NO_START_LINE", "no PEM block found"),
            ("failedToLoadCertificate", "it holds no readable PEM certificate"),
            ("No such file or directory", "no such file"),
        ]
        for (marker, sentence) in known where text.contains(marker) { return sentence }
        return "TLS failed (\(text.prefix(200)))"
    }
}

/// A failed TCP connect as a sentence.
enum ConnectErrorText {
    static func describe(_ error: any Error) -> String {
        if let connect = error as? NIOConnectionError {
            if let first = connect.connectionErrors.first { return describe(first.error) }
            if connect.dnsAAAAError != nil || connect.dnsAError != nil { return "its name could not be resolved" }
        }
        if error is ChannelError, "\(error)".contains("connectTimeout") { return "no answer to the connection attempt (timed out)" }
        if let io = error as? IOError {
            switch io.errnoCode {
            case 111: return "connection refused (nothing listens on that port)"
            case 113, 101: return "no route to the host"
            case 110: return "the connection attempt timed out"
            default: return "\(io)"
            }
        }
        return "\(error)"
    }
}
