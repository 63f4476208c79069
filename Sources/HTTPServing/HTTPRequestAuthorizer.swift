import HTTPFetching
/// Decides whether a request may reach a handler (the PIR server's Privacy Pass check).
public protocol HTTPRequestAuthorizer: Sendable {
    /// `nil` lets the request through; otherwise the response to send instead (401 with a
    /// challenge, 403 for a spent token, …).
    func authorize(_ request: HTTPServerRequest) async -> HTTPServerResponse?
    /// A check of the request head alone, before its body is read, that must not block or
    /// suspend (for Privacy Pass: a token is present and verifies under a key held now; it is
    /// spent only by `authorize`). `nil` lets the body be read.
    func precheck(headers: [(name: String, value: String)]) -> HTTPServerResponse?
}

extension HTTPRequestAuthorizer {
    public func precheck(headers: [(name: String, value: String)]) -> HTTPServerResponse? { nil }
}
