import Foundation

/// Where one load stands with a server's Digest or Basic challenges.
struct AuthenticationProgress {
    /// Credentials sent and answered with another 401 (the challenge's `previousFailureCount`).
    var refused = 0
    /// The credential last sent and its protection space.
    var sent: (credential: URLCredential, space: URLProtectionSpace)?
    /// Digest answers sent again for a stale nonce.
    var staleRetries = 0
    /// The delegate's credential, to keep once the server accepts it.
    var toKeep: (credential: URLCredential, space: URLProtectionSpace)?

    /// After an answer that is not a 401: a credential the delegate gave goes to the storage
    /// (unless its persistence is `.none`).
    mutating func keepAccepted(in storage: URLCredentialStorage?) {
        guard let kept = toKeep else { return }
        toKeep = nil
        storage?.set(kept.credential, for: kept.space)
    }
}

extension URLSession {
    /// A 401 with a Digest or Basic challenge (RFC 9110 §11.6.1, RFC 7616, RFC 7617): true when
    /// `request` now carries a credential to try, false when the 401 is the answer. The delegate,
    /// when there is one, decides; the space's default credential in the session's storage is
    /// proposed to it and is what default handling (or no delegate) sends, once. At most 5
    /// credentials are tried for one load.
    func answerChallenge(
        of response: HTTPURLResponse, request: inout URLRequest, progress: inout AuthenticationProgress
    ) async throws(HTTPLoadError) -> Bool {
        guard progress.refused < 5,
            let chosen = HTTPAuthentication.choose(in: response.headerFields.filter { $0.name.lowercased() == "www-authenticate" }.map(\.value))
        else { return false }
        // A Digest nonce gone stale (RFC 7616 §3.3): the credential just sent goes again with the
        // new nonce, and nobody is asked.
        if let digest = chosen.digest, digest.stale, let sent = progress.sent, progress.staleRetries < 2 {
            progress.staleRetries += 1
            request.setValue(try authorization(digest, credential: sent.credential, request: request), forHTTPHeaderField: "Authorization")
            return true
        }
        let origin = try Self.origin(of: request.url)
        let space = URLProtectionSpace(
            host: origin.host, port: origin.port, protocol: origin.isSecure ? "https" : "http", realm: chosen.realm, authenticationMethod: chosen.method)
        let stored = configuration.urlCredentialStorage?.defaultCredential(for: space)
        // The stored credential goes once, and only before any other was tried.
        var answer = progress.sent == nil ? stored : nil
        if let delegate {
            let challenge = URLAuthenticationChallenge(
                protectionSpace: space, previousFailureCount: progress.refused, failureResponse: response,
                proposedCredential: progress.sent?.credential ?? stored)
            switch await delegate.urlSession(self, didReceive: challenge) {
            case (.useCredential, let credential?):
                answer = credential
                progress.toKeep = credential == stored ? nil : (credential, space)
            case (.useCredential, nil), (.rejectProtectionSpace, _):
                answer = nil
            case (.cancelAuthenticationChallenge, _):
                throw .cancelled
            case (.performDefaultHandling, _):
                break
            }
        }
        guard let answer else { return false }
        progress.refused += 1
        progress.sent = (answer, space)
        request.setValue(try authorization(chosen.digest, credential: answer, request: request), forHTTPHeaderField: "Authorization")
        return true
    }

    /// The delegate's verdict on a new TLS connection's server (`NSURLAuthenticationMethodServerTrust`).
    func judge(_ trust: ServerTrust, origin: HTTPOrigin) async -> ServerTrustVerdict {
        guard let delegate else { return .defaultHandling }
        let challenge = URLAuthenticationChallenge(
            protectionSpace: URLProtectionSpace(
                host: origin.host, port: origin.port, protocol: "https", realm: nil, authenticationMethod: .serverTrust, serverTrust: trust),
            previousFailureCount: 0, failureResponse: nil)
        let (disposition, credential) = await delegate.urlSession(self, didReceive: challenge)
        switch disposition {
        case .useCredential:
            guard let accepted = credential?.trust else { return .defaultHandling }
            return .accept(accepted)
        case .cancelAuthenticationChallenge:
            return .cancel
        case .performDefaultHandling, .rejectProtectionSpace:
            return .defaultHandling
        }
    }

    /// The `Authorization` value for `request`: Basic without a Digest challenge; for a Digest
    /// one, over its method, its request target as the request line carries it, and its body for
    /// `auth-int` (a body read from a file cannot be: the load fails saying so).
    func authorization(_ digest: DigestChallenge?, credential: URLCredential, request: URLRequest) throws(HTTPLoadError) -> String {
        guard let digest else { return credential.basicAuthorization }
        if digest.protection == .authInt, request.bodyFile != nil {
            throw .invalidConfiguration("the server asks for Digest with qop=auth-int, which a body read from a file cannot answer; upload it from memory")
        }
        let target = try prepare(request, origin: try Self.origin(of: request.url)).head.uri
        return digest.authorization(
            user: credential.user, password: credential.password, method: request.httpMethod, uri: target, body: request.httpBody ?? Data(),
            count: 1, clientNonce: DigestChallenge.makeClientNonce())
    }
}
