import Foundation
import HTTPServing
import ObliviousHTTP

/// The Oblivious HTTP gateway (RFC 9458 §5–§6):
/// - `GET /ohttp-keys`: the key configurations (`application/ohttp-keys`, RFC 9540 §3);
/// - `POST /gateway` (`message/ohttp-req`): opens the request, forwards the Binary HTTP
///   request inside to its target if the target's authority is allow-listed, and returns the
///   target's answer encapsulated (`message/ohttp-res`).
/// Forwarded requests carry only the inner request's method, path, body and a fixed set of
/// header fields; the gateway sees the relay's connection, never a client address, and logs
/// no payloads or targets' answers. A request it cannot open is answered 400 in the clear
/// (§5.2); a target it will not reach is answered with an encapsulated 403.
public struct GatewayResponder: HTTPResponder {
    public static let requestMediaType = "message/ohttp-req"
    public static let responseMediaType = "message/ohttp-res"
    /// Header fields passed to targets and back; everything else is dropped.
    static let forwardedRequestHeaders: Set<String> = ["content-type", "accept", "authorization", "user-identifier", "user-agent"]
    static let returnedResponseHeaders: Set<String> = ["content-type", "www-authenticate", "retry-after", "cache-control"]

    public let keys: GatewayKeyRing
    /// Allowed target authorities (as the inner request names them) and where each is reached.
    public let targets: [String: URL]
    let upstream: HTTPUpstream
    let metrics: GatewayMetrics

    public init(keys: GatewayKeyRing, targets: [String: URL], upstream: HTTPUpstream = HTTPUpstream(), metrics: GatewayMetrics = GatewayMetrics()) {
        self.keys = keys
        self.targets = targets
        self.upstream = upstream
        self.metrics = metrics
    }

    public func bodyLimit(method: String, path: String) -> Int { path == "/gateway" ? 4 << 20 : 0 }

    /// POST /gateway carries `message/ohttp-req` only (refused on its head otherwise).
    public func requiredContentType(method: String, path: String) -> String? {
        method == "POST" && path == "/gateway" ? Self.requestMediaType : nil
    }

    public func endpointLabel(path: String) -> String { ["/ohttp-keys", "/gateway"].contains(path) ? path : "other" }

    public func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        switch (request.method, request.path) {
        case ("GET", "/ohttp-keys"):
            return HTTPServerResponse(contentType: OHTTPKeyConfig.listMediaType, body: keys.publishedConfigs(now: UInt64(Date().timeIntervalSince1970)),
                                      headers: [("Cache-Control", "max-age=3600")])
        case ("POST", "/gateway"):
            return await forward(request)
        case (_, "/ohttp-keys"), (_, "/gateway"):
            return .text(405, "\(request.path) does not take \(request.method)")
        default:
            return .text(404, "no such endpoint \(request.path)")
        }
    }

    func forward(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        guard let keyID = request.body.first, let key = keys.key(id: keyID) else {
            metrics.decapsulationFailed.increment()
            return .text(400, "no key with the request's key id; fetch /ohttp-keys again")
        }
        let opened: (request: [UInt8], context: ObliviousHTTP.GatewayContext)
        let inner: BinaryHTTPRequest
        do throws(ObliviousHTTPError) {
            opened = try ObliviousHTTP.decapsulateRequest(request.body, keyID: keyID, privateKey: key.privateKey)
            inner = try BinaryHTTPRequest(decoding: opened.request)
        } catch {
            metrics.decapsulationFailed.increment()
            return .text(400, "cannot open the request: \(error)")
        }
        let answer: BinaryHTTPResponse
        if let base = targets[inner.authority.lowercased()], inner.path.hasPrefix("/"),
           let url = URL(string: base.absoluteString.trimmingSuffix("/") + inner.path) {
            let headers = inner.headers.filter { Self.forwardedRequestHeaders.contains($0.0.lowercased()) }.map { (name: $0.0, value: $0.1) }
            let target = metrics.target
            let response = await upstream.send(method: inner.method, url: url, headers: headers, body: inner.content) { target.record(nanoseconds: $0, failure: $1) }
            metrics.forwarded.increment()
            answer = BinaryHTTPResponse(
                status: response.status,
                headers: response.headers.filter { Self.returnedResponseHeaders.contains($0.name.lowercased()) }.map { ($0.name.lowercased(), $0.value) },
                content: response.body)
        } else {
            metrics.targetRefused.increment()
            answer = BinaryHTTPResponse(status: 403, headers: [("content-type", "text/plain")], content: Array("target not allowed\n".utf8))
        }
        do throws(ObliviousHTTPError) {
            return HTTPServerResponse(contentType: Self.responseMediaType, body: try opened.context.sealResponse(answer.encoded()))
        } catch {
            return .text(500, "cannot encapsulate the response")
        }
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        var text = self
        while text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }
}
