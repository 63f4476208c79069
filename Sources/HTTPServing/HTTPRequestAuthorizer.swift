/// Decides whether a request may reach a handler (the PIR server's Privacy Pass check).
public protocol HTTPRequestAuthorizer: Sendable {
    /// `nil` lets the request through; otherwise the response to send instead (401 with a
    /// challenge, 403 for a spent token, …).
    func authorize(_ request: HTTPServerRequest) async -> HTTPServerResponse?
}
