import Foundation
import HTTPServing
import ObliviousHTTP

/// The Oblivious HTTP relay (RFC 9458 §4–§6): `POST /relay` with `message/ohttp-req` is sent to
/// the one configured gateway with nothing but its body and Content-Type — no client address,
/// no Forwarded or X-Forwarded-For, no cookies or other identifying field — and the gateway's
/// `message/ohttp-res` comes back the same way. `GET /ohttp-keys` passes the gateway's key
/// configurations through, so clients never contact the gateway directly. The relay cannot
/// read what it carries and logs only endpoint, status and duration.
public struct RelayResponder: HTTPResponder {
    public let gatewayURL: URL
    public let keysURL: URL?
    let upstream: HTTPUpstream
    let metrics: RelayMetrics

    public init(gatewayURL: URL, keysURL: URL?, upstream: HTTPUpstream = HTTPUpstream(), metrics: RelayMetrics = RelayMetrics()) {
        self.gatewayURL = gatewayURL
        self.keysURL = keysURL
        self.upstream = upstream
        self.metrics = metrics
    }

    public func bodyLimit(method: String, path: String) -> Int { path == "/relay" ? 4 << 20 : 0 }

    /// POST /relay carries `message/ohttp-req` only (refused on its head otherwise).
    public func requiredContentType(method: String, path: String) -> String? {
        method == "POST" && path == "/relay" ? GatewayResponder.requestMediaType : nil
    }

    public func endpointLabel(path: String) -> String { ["/relay", "/ohttp-keys"].contains(path) ? path : "other" }

    public func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        switch (request.method, request.path) {
        case ("POST", "/relay"):
            let gateway = metrics.gateway
            let answer = await upstream.send(method: "POST", url: gatewayURL, headers: [("Content-Type", GatewayResponder.requestMediaType)], body: request.body) {
                gateway.record(nanoseconds: $0, failure: $1)
            }
            metrics.relayed.increment()
            return Self.passBack(answer, allowed: [GatewayResponder.responseMediaType])
        case ("GET", "/ohttp-keys"):
            guard let keysURL else { return .text(404, "this relay does not pass key configurations through") }
            let answer = await upstream.send(method: "GET", url: keysURL, headers: [("Accept", OHTTPKeyConfig.listMediaType)], body: [])
            return Self.passBack(answer, allowed: [OHTTPKeyConfig.listMediaType])
        case (_, "/relay"), (_, "/ohttp-keys"):
            return .text(405, "\(request.path) does not take \(request.method)")
        default:
            return .text(404, "no such endpoint \(request.path)")
        }
    }

    /// The gateway's answer with only its status, body and an expected Content-Type (plain
    /// text for the gateway's own errors).
    static func passBack(_ answer: HTTPServerResponse, allowed: Set<String>) -> HTTPServerResponse {
        let type = answer.header("Content-Type")?.lowercased() ?? ""
        let passed = allowed.contains(type) || type.hasPrefix("text/plain") ? type : "application/octet-stream"
        var headers: [(name: String, value: String)] = [("Content-Type", passed)]
        if let cache = answer.header("Cache-Control"), allowed.contains(OHTTPKeyConfig.listMediaType) { headers.append(("Cache-Control", cache)) }
        return HTTPServerResponse(status: answer.status, headers: headers, body: answer.body)
    }
}
