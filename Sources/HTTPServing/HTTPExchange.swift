import HTTPFetching
import Dispatch
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore

/// How the server answers one request, run by Hummingbird for each HTTP/1.1 request and each
/// HTTP/2 stream: built-in endpoints first, then the content type and admission checks on the
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
        let majorVersion = channel.isHTTP2Stream ? 2 : 1
        let keepAlive = request.headers[.connection]?.lowercased() != "close"
        let answer = Answer(method: method, started: started, endpoint: endpointLabel(path), exchange: self)

        if let builtIn = BuiltInEndpoints.response(method: method, path: path, responder: responder, metrics: metrics) {
            // Answered at once; the (empty) rest of the request is not needed.
            return try await answer.write(builtIn, close: !keepAlive, to: writer, channel: channel)
        }
        let headers = request.headers.map { (name: $0.name.rawName, value: $0.value) }
        if let refusal = Self.refusal(ofType: request.headers[.contentType], required: responder.requiredContentType(method: method, path: path))
            ?? responder.admit(method: method, path: path, headers: headers) {
            return try await answer.write(refusal, close: true, to: writer, channel: channel)
        }

        let limit = responder.bodyLimit(method: method, path: path)
        var body: [UInt8] = []
        var reserved = 0
        defer { usage.release(reserved) }
        for try await buffer in request.body {
            let count = buffer.readableBytes
            if body.count + count > limit {
                let response = HTTPServerResponse.text(413, "request body of at least \(body.count + count) bytes exceeds the \(limit)-byte limit")
                return try await answer.write(response, close: true, to: writer, channel: channel)
            }
            guard usage.reserve(count) else {
                let response = HTTPServerResponse.text(503, "the server is holding too many request bodies; try again", headers: [("Retry-After", "1")])
                return try await answer.write(response, close: true, to: writer, channel: channel)
            }
            reserved += count
            body.append(contentsOf: buffer.readableBytesView)
        }
        let response = await responder.respond(
            to: HTTPServerRequest(method: method, path: path, query: query, headers: headers, body: body, majorVersion: majorVersion))
        usage.release(reserved)
        reserved = 0
        // After an error the connection is closed: whatever the client sends next is not worth
        // reading (a 401 challenge keeps it, the token comes next).
        let close = !keepAlive || (response.status >= 400 && response.status != 401)
        try await answer.write(response, close: close, to: writer, channel: channel)
    }

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
            let nanoseconds = DispatchTime.now().uptimeNanoseconds - started
            exchange.metrics?.record(endpoint: endpoint, status: response.status, nanoseconds: Int64(clamping: nanoseconds))
            // Routine: every request at debug (the metrics count them); refusals a client caused
            // are not the operator's problem either.
            exchange.logger.debug("request", metadata: [
                "method": "\(method)", "path": "\(endpoint)", "status": "\(response.status)", "ms": "\(nanoseconds / 1_000_000)",
            ])
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
