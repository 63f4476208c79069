/// What an `HTTPServer` serves: body limits, the label logs and metrics use for a path, and
/// the answer to each request.
public protocol HTTPResponder: Sendable {
    /// The largest body accepted for this request line; longer bodies get 413 before the
    /// handler sees anything.
    func bodyLimit(method: String, path: String) -> Int
    /// A label of low cardinality for logs and metrics ("other" for unknown paths), so that
    /// nothing a client chooses ends up in a log verbatim.
    func endpointLabel(path: String) -> String
    /// The answer. Runs off the event loop; may suspend.
    func respond(to request: HTTPServerRequest) async -> HTTPServerResponse
    /// Called after each response is written (metrics).
    func didRespond(endpoint: String, status: Int, microseconds: Int)
}

extension HTTPResponder {
    public func didRespond(endpoint: String, status: Int, microseconds: Int) {}
}
