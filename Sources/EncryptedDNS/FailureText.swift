import HTTPFetching
import NIOSSL

/// Why a connection to an encrypted server failed, as a sentence: TLS failures in words
/// (the certificate's name, its issuer), socket failures in the system's words.
enum FailureText {
    static func reason(_ error: any Error) -> String {
        if let known = error as? EncryptedDNSError { return known.description }
        if error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError { return TLSFailure.describe(error) }
        return ConnectFailureText.reason(error)
    }
}
