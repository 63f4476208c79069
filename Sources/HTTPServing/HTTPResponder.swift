import HTTPFetching
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
    /// Looks at a request's head before any of its body is read: `nil` reads on, a response
    /// is sent instead and the connection closed (a request without credentials never gets to
    /// upload its body). Runs on the event loop: must not block.
    func admit(method: String, path: String, headers: [(name: String, value: String)]) -> HTTPServerResponse?
    /// The media type a request's body must have (nil: any). Checked on the head, before `admit`
    /// and before any of the body is read: another Content-Type gets 415 and the connection closes.
    func requiredContentType(method: String, path: String) -> String?
    /// Why the role cannot take work now (nil: ready). `GET /readyz` answers 503 with it; a load
    /// balancer then sends requests elsewhere. `GET /healthz` answers 200 while the process
    /// serves at all.
    func unreadiness() -> String?
}

extension HTTPResponder {
    public func admit(method: String, path: String, headers: [(name: String, value: String)]) -> HTTPServerResponse? { nil }
    public func requiredContentType(method: String, path: String) -> String? { nil }
    public func unreadiness() -> String? { nil }
}

/// What every HTTP role answers itself, before admission (no Privacy Pass token, no body):
/// `GET /healthz` and `GET /readyz` for a process supervisor or load balancer, and `GET /metrics`
/// (Prometheus text) when the server was given an exposition.
enum BuiltInEndpoints {
    static let healthPaths = ["/healthz", "/readyz"]
    static let metricsPath = "/metrics"

    /// Whether the server answers `path` itself.
    static func serves(_ path: String, metrics: HTTPServerMetrics?) -> Bool {
        healthPaths.contains(path) || (path == metricsPath && metrics?.exposition != nil)
    }

    /// The answer to a built-in endpoint, or nil when the request is for the responder.
    static func response(method: String, path: String, responder: any HTTPResponder, metrics: HTTPServerMetrics?) -> HTTPServerResponse? {
        guard serves(path, metrics: metrics) else { return nil }
        guard method == "GET" || method == "HEAD" else { return .text(405, "\(path) takes GET") }
        if path == metricsPath, let exposition = metrics?.exposition {
            return HTTPServerResponse(contentType: "text/plain; version=0.0.4; charset=utf-8", body: exposition.exposition())
        }
        if path == "/readyz", let reason = responder.unreadiness() { return .text(503, "not ready: \(reason)") }
        return .text(200, "ok")
    }
}
