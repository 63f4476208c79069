import Foundation

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
    /// Looks at a request's head before any of its body is read: `nil` reads on, a response
    /// is sent instead and the connection closed (a request without credentials never gets to
    /// upload its body). Runs on the event loop: must not block.
    func admit(method: String, path: String, headers: [(name: String, value: String)]) -> HTTPServerResponse?
}

extension HTTPResponder {
    /// For `admit`: a 415 unless the head's Content-Type is `mediaType` (case aside), so a body
    /// of the wrong kind is refused before it is read.
    public static func refusingContentType(otherThan mediaType: String, in headers: [(name: String, value: String)]) -> HTTPServerResponse? {
        let value = headers.first { $0.name.equalsIgnoringASCIICase("Content-Type") }?.value ?? ""
        return value.trimmingCharacters(in: .whitespaces).lowercased() == mediaType ? nil : .text(415, "Content-Type must be \(mediaType)")
    }

    public func didRespond(endpoint: String, status: Int, microseconds: Int) {}
    public func admit(method: String, path: String, headers: [(name: String, value: String)]) -> HTTPServerResponse? { nil }
}
