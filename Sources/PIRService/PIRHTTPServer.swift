import Dispatch
import HTTPServing
import Logging
import PIRProtobuf

/// The PIR service over HTTP (HTTP/1.1; with TLS, HTTP/2 by ALPN): `POST /config`,
/// `POST /key`, `POST /queries` (protobuf bodies), and `GET /metrics` (Prometheus text) when
/// given an exposition. With an authorizer (Privacy Pass), every POST must pass it first. Work runs on a `FairWorkQueue` (not the event loop or the cooperative
/// pool): each request's queries take turns with every other request's, and when `workCapacity`
/// queries are already waiting a request is answered 503 with Retry-After. Errors are 4xx with a
/// one-line reason, except the two a client acts on (Apple's `Error` message: 400 key not found,
/// 410 configuration gone); logs never carry bodies or users.
public final class PIRHTTPServer: RunnableHTTPServer {
    public let handler: PIRRequestHandler
    let server: HTTPServer
    let work: FairWorkQueue

    public init(
        handler: PIRRequestHandler, logger: Logger, authorizer: (any HTTPRequestAuthorizer)? = nil, workCapacity: Int = 1024,
        limits: HTTPServerLimits = HTTPServerLimits(), tls: ServerTLS? = nil, metrics: HTTPServerMetrics? = nil
    ) {
        self.handler = handler
        work = FairWorkQueue(capacity: workCapacity)
        server = HTTPServer(
            responder: PIRResponder(service: handler, authorizer: authorizer, work: work), logger: logger, limits: limits, tls: tls, metrics: metrics)
    }

    /// Binds and starts serving; returns the bound port (useful with port 0).
    public func start(host: String, port: Int) async throws -> Int {
        try await server.start(host: host, port: port)
    }

    /// Binds to a parsed `--listen` address.
    public func start(_ address: ListenAddress) async throws -> Int {
        try await server.start(address)
    }

    public func shutdown() async {
        await server.shutdown()
        work.stop()
    }
}

/// Routes the PIR endpoints to `PIRRequestHandler`.
struct PIRResponder: HTTPResponder {
    static let endpoints = ["/config", "/key", "/queries"]
    let service: PIRRequestHandler
    let authorizer: (any HTTPRequestAuthorizer)?
    /// Queries run here: CPU-bound work kept off the event loop and the cooperative pool.
    let work: FairWorkQueue

    func bodyLimit(method: String, path: String) -> Int { PIRRequestHandler.limits[path] ?? 0 }

    /// With Privacy Pass, a POST without a token that verifies is refused before its body is read.
    func admit(method: String, path: String, headers: [(name: String, value: String)]) -> HTTPServerResponse? {
        guard let authorizer, method == "POST", Self.endpoints.contains(path) else { return nil }
        return authorizer.precheck(headers: headers)
    }

    func endpointLabel(path: String) -> String { Self.endpoints.contains(path) ? path : "other" }

    /// Not ready while the work queue is full: a query now would be refused with 503.
    func unreadiness() -> String? {
        work.queuedJobs >= work.capacity ? "the work queue is full (\(work.capacity) jobs)" : nil
    }

    func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        guard Self.endpoints.contains(request.path) else { return .text(404, "no such endpoint \(request.path)") }
        guard request.method == "POST" else { return .text(405, "\(request.path) takes POST") }
        if let authorizer, let refusal = await authorizer.authorize(request) { return refusal }
        let service = self.service, body = request.body, user = request.header("User-Identifier")
        let result: Result<[UInt8], PIRServiceError>
        do throws(FairWorkQueue.Overloaded) {
            switch request.path {
            case "/config":
                result = try await work.run { Result { () throws(PIRServiceError) in try service.handleConfig(body: body, user: user) } }
            case "/key":
                result = try await work.run { Result { () throws(PIRServiceError) in try service.handleKey(body: body, user: user); return [] } }
            default:
                // Checked as one job, then answered one job per query, taking turns with others.
                switch try await work.run({ Result { () throws(PIRServiceError) in try service.prepareQueries(body: body, user: user) } }) {
                case let .failure(error): result = .failure(error)
                case let .success(prepared):
                    let answers = try await work.run(count: prepared.count) { index in service.answer(prepared, at: index) }
                    var responses: [ProtoResponse] = []
                    var failure: PIRServiceError?
                    for answer in answers {
                        switch answer {
                        case let .success(response): responses.append(response)
                        case let .failure(error): failure = failure ?? error
                        }
                    }
                    result = failure.map { .failure($0) } ?? .success(service.serialize(responses))
                }
            }
        } catch {
            service.metrics.countOverload()
            return .text(503, "the server is busy; retry in \(error.retryAfter) s", headers: [("Retry-After", "\(error.retryAfter)")])
        }
        switch result {
        case let .success(bytes): return HTTPServerResponse(contentType: "application/x-protobuf", body: bytes)
        case let .failure(error):
            if let answer = error.protocolError, let bytes = try? answer.serializedBytes() as [UInt8] {
                return HTTPServerResponse(status: error.httpStatus, contentType: "application/x-protobuf", body: bytes)
            }
            return .text(error.httpStatus, error.description)
        }
    }
}
