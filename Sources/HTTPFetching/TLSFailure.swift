import NIOSSL

/// Sentences for TLS failures (BoringSSL's error queue is not for people).
package enum TLSFailure {
    package static func describe(_ error: any Error) -> String {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "the certificate is not for this host"
        }
        let text = String(describing: error)
        let known: [(String, String)] = [
            ("CERTIFICATE_VERIFY_FAILED", "the certificate is not signed by a trusted authority (or has expired)"),
            ("WRONG_VERSION_NUMBER", "the server does not speak TLS"),
            ("NO_START_LINE", "no PEM block found"),
            ("failedToLoadCertificate", "it holds no readable PEM certificate"),
            ("failedToLoadPrivateKey", "it holds no readable PEM private key (an encrypted key is not supported)"),
            ("TLSV1_ALERT_PROTOCOL_VERSION", "no TLS version in common (1.2 or later is required)"),
            ("NO_SHARED_CIPHER", "no cipher suite in common"),
            ("uncleanShutdown", "the server closed the connection without ending TLS (no close_notify)"),
            ("No such file or directory", "no such file"),
            ("Permission denied", "permission denied"),
        ]
        for (marker, sentence) in known where text.contains(marker) { return sentence }
        if error is NIOSSLError || error is BoringSSLError { return "TLS failed (\(text.prefix(160)))" }
        return text
    }
}
