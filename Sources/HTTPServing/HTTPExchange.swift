import HTTPFetching
import Dispatch
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore

/// How the server answers one request: run by Hummingbird for each HTTP/1.1 request
/// (``serve(_:writer:channel:)``), its rules shared with `HTTP2StreamExchange` for each HTTP/2
/// stream. Built-in endpoints first, then the content type and admission checks on the
/// head (before any of the body is read), the body collected within the responder's limit and
/// the server's budget, the responder's answer, and one metrics record and debug log line.
struct HTTPExchange: Sendable {
    let responder: any HTTPResponder
    let logger: Logger
    let usage: HTTPServerUsage
    let metrics: HTTPServerMetrics?

    func serve(_ request: Request, writer: consuming ResponseWriter, channel: any Channel) async throws {
        let started = DispatchTime.now().uptimeNanoseconds
        let method = request.method.rawValue
        let (path, query) = Self.split(request.head.path ?? "/")
        let keepAlive = request.headers[.connection]?.lowercased() != "close"
        let answer = Answer(method: method, started: started, endpoint: endpointLabel(path), exchange: self)

        var headers = request.headers.map { (name: $0.name.rawName, value: $0.value) }
        // HTTP types keep an HTTP/1.1 request's Host as the head's authority, not a field: put
        // back, so handlers find it where an HTTP/2 request's `:authority` is put too.
        if let authority = request.head.authority, !headers.contains(where: { $0.name.equalsIgnoringASCIICase("host") }) {
            headers.insert((name: "host", value: authority), at: 0)
        }
        if let (early, builtIn) = answerOnHead(method: method, path: path, contentType: request.headers[.contentType], headers: headers) {
            // A built-in endpoint's (the empty rest of the request is not needed) or a refusal.
            return try await answer.write(early, close: builtIn ? !keepAlive : true, to: writer, channel: channel)
        }

        let limit = responder.bodyLimit(method: method, path: path)
        var body: [UInt8] = []
        var reserved = 0
        defer { usage.release(reserved) }
        for try await buffer in request.body {
            let count = buffer.readableBytes
            if body.count + count > limit {
                return try await answer.write(Self.bodyTooLarge(atLeast: body.count + count, limit: limit), close: true, to: writer, channel: channel)
            }
            guard usage.reserve(count) else {
                return try await answer.write(Self.bodyBudgetSpent, close: true, to: writer, channel: channel)
            }
            reserved += count
            body.append(contentsOf: buffer.readableBytesView)
        }
        let response = await responder.respond(
            to: HTTPServerRequest(method: method, path: path, query: query, headers: headers, body: body, majorVersion: 1))
        usage.release(reserved)
        reserved = 0
        try await answer.write(response, close: Self.closes(after: response, keepAlive: keepAlive), to: writer, channel: channel)
    }

    /// The answer given on the head alone, before any of the body is read: a built-in
    /// endpoint's (`builtIn`), or a refusal (the content type, the responder's admission); nil
    /// when the body is to be read and the responder asked.
    func answerOnHead(
        method: String, path: String, contentType: String?, headers: [(name: String, value: String)]
    ) -> (response: HTTPServerResponse, builtIn: Bool)? {
        if let builtIn = BuiltInEndpoints.response(method: method, path: path, responder: responder, metrics: metrics) {
            return (builtIn, true)
        }
        if let refusal = Self.refusal(ofType: contentType, required: responder.requiredContentType(method: method, path: path))
            ?? responder.admit(method: method, path: path, headers: headers) {
            return (refusal, false)
        }
        return nil
    }

    /// Whether the connection (HTTP/2: the stream) closes after `response`: after an error
    /// whatever the client sends next is not worth reading (a 401 challenge keeps it, the token
    /// comes next).
    static func closes(after response: HTTPServerResponse, keepAlive: Bool) -> Bool {
        !keepAlive || (response.status >= 400 && response.status != 401)
    }

    /// Counts and logs one answer (before it is written, so whoever reads the answer can rely
    /// on the log line being there): method, endpoint label, status and duration only.
    func record(method: String, endpoint: String, started: UInt64, status: Int) {
        let nanoseconds = DispatchTime.now().uptimeNanoseconds - started
        metrics?.record(endpoint: endpoint, status: status, nanoseconds: Int64(clamping: nanoseconds))
        // Routine: every request at debug (the metrics count them); refusals a client caused
        // are not the operator's problem either.
        logger.debug("request", metadata: [
            "method": "\(method)", "path": "\(endpoint)", "status": "\(status)", "ms": "\(nanoseconds / 1_000_000)",
        ])
    }

    /// 413: the body has reached `count` bytes, past the responder's `limit`.
    static func bodyTooLarge(atLeast count: Int, limit: Int) -> HTTPServerResponse {
        .text(413, "request body of at least \(count) bytes exceeds the \(limit)-byte limit")
    }

    /// 503: the server's budget of buffered request bodies is spent.
    static let bodyBudgetSpent = HTTPServerResponse.text(503, "the server is holding too many request bodies; try again", headers: [("Retry-After", "1")])

    /// The label logs and metrics use for `path`.
    func endpointLabel(_ path: String) -> String {
        BuiltInEndpoints.serves(path, metrics: metrics) ? path : responder.endpointLabel(path: path)
    }

    static func split(_ uri: String) -> (path: String, query: String?) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, nil) }
        return (String(uri[..<mark]), String(uri[uri.index(after: mark)...]))
    }

    /// 415 when the head's Content-Type is not the required one (case aside; the parser has
    /// already stripped the whitespace around a field value, RFC 9110 §5.5).
    static func refusal(ofType value: String?, required: String?) -> HTTPServerResponse? {
        guard let required else { return nil }
        return value?.lowercased() == required ? nil : .text(415, "Content-Type must be \(required)")
    }

    /// Writes one answer: counted and logged first, so whoever reads the answer can rely on the
    /// log line being there.
    struct Answer {
        let method: String
        let started: UInt64
        let endpoint: String
        let exchange: HTTPExchange

        func write(_ response: HTTPServerResponse, close: Bool, to writer: consuming ResponseWriter, channel: any Channel) async throws {
            exchange.record(method: method, endpoint: endpoint, started: started, status: response.status)
            var fields = HTTPFields()
            for (name, value) in response.headers where !name.equalsIgnoringASCIICase("content-length") {
                guard let fieldName = HTTPField.Name(name) else { continue }
                fields.append(HTTPField(name: fieldName, value: value))
            }
            fields[.contentLength] = String(response.body.count)
            // HTTPExchangeTracker closes the connection (HTTP/1.1) or the stream (HTTP/2) after it.
            if close { fields[.connection] = "close" }
            let head = HTTPResponse(status: HTTPResponse.Status(code: response.status), headerFields: fields)
            if response.body.isEmpty {
                try await writer.write(response: head, body: ResponseBody())
            } else {
                try await writer.write(response: head, body: ResponseBody(byteBuffer: channel.allocator.buffer(bytes: response.body)))
            }
        }
    }
}
