import Foundation
import HTTPServing
import ObliviousHTTP

/// The Oblivious DoH proxy (RFC 9230 §4.1–§4.5): `POST /dns-query?targethost=H&targetpath=P`
/// with `application/oblivious-dns-message` is sent on to `https://H/P` — only to targets on its
/// allow list (§11.2: proxies "may only forward requests to known or otherwise trusted
/// targets") — with nothing but its body, Content-Type and Accept: no client address,
/// Forwarded or cookie (§4.5). The target's 2xx, 3xx, 4xx and 5xx come back unmodified; a 2xx of
/// another media type becomes 502. `GET /odohconfigs?targethost=H` passes the target's
/// configurations through so that clients never contact a target themselves (a NetExt
/// addition, as the Oblivious HTTP relay passes `/ohttp-keys`). It cannot read what it carries
/// and logs only endpoint, status and duration.
public struct ObliviousDoHProxyResponder: HTTPResponder {
    public static let configsPath = "/odohconfigs"
    /// Allowed target authorities (`host` or `host:port`, lowercase).
    public let targets: Set<String>
    public let queryPath: String
    let upstream: HTTPUpstream
    let metrics: ObliviousDoHProxyMetrics

    public init(targets: Set<String>, queryPath: String = "/dns-query", upstream: HTTPUpstream = HTTPUpstream(), metrics: ObliviousDoHProxyMetrics = ObliviousDoHProxyMetrics()) {
        self.targets = Set(targets.map { $0.lowercased() })
        self.queryPath = queryPath
        self.upstream = upstream
        self.metrics = metrics
    }

    public func bodyLimit(method: String, path: String) -> Int { path == queryPath ? ObliviousDoH.maximumMessageBytes : 0 }

    public func requiredContentType(method: String, path: String) -> String? {
        method == "POST" && path == queryPath ? ObliviousDoH.mediaType : nil
    }

    public func endpointLabel(path: String) -> String { path == queryPath ? "/dns-query" : path == Self.configsPath ? path : "other" }

    public func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        let variables = Self.queryVariables(request.query)
        switch (request.method, request.path) {
        case ("POST", queryPath):
            guard let host = variables["targethost"], let path = variables["targetpath"] else {
                // §4.1: a request not correctly encoded gets 4xx with Proxy-Status http_request_error.
                return .text(400, "this server is only a proxy: name the target with targethost and targetpath", headers: [("Proxy-Status", "netext-odoh-proxy; error=http_request_error")])
            }
            guard let url = target(host: host, path: path) else { return refused(host) }
            let target = metrics.target
            let answer = await upstream.send(
                method: "POST", url: url, headers: [("Content-Type", ObliviousDoH.mediaType), ("Accept", ObliviousDoH.mediaType)], body: request.body
            ) { target.record(nanoseconds: $0, failure: $1) }
            metrics.forwarded.increment()
            return Self.passBack(answer)
        case ("GET", Self.configsPath):
            guard let host = variables["targethost"] else { return .text(400, "name the target with targethost") }
            guard let url = target(host: host, path: ObliviousDoHTargetResponder.configsPath) else { return refused(host) }
            let answer = await upstream.send(method: "GET", url: url, headers: [], body: [])
            guard (200..<300).contains(answer.status) else { return Self.passBack(answer) }
            return HTTPServerResponse(contentType: "application/octet-stream", body: answer.body, headers: [("Cache-Control", "max-age=3600")])
        case (_, queryPath), (_, Self.configsPath):
            return .text(405, "\(request.path) does not take \(request.method)")
        default:
            return .text(404, "no such endpoint \(request.path)")
        }
    }

    /// `https://host/path` for an allowed target and an absolute path without a query.
    func target(host: String, path: String) -> URL? {
        let authority = host.lowercased()
        guard targets.contains(authority), path.hasPrefix("/"), !path.contains("?"), !path.contains("#") else { return nil }
        return URL(string: "https://\(authority)\(path)")
    }

    func refused(_ host: String) -> HTTPServerResponse {
        metrics.targetRefused.increment()
        // §4.1: a proxy that will not forward answers 4xx with Proxy-Status (RFC 9209 §2.1.1).
        return HTTPServerResponse(
            status: 403, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Proxy-Status", "netext-odoh-proxy; error=http_request_denied")],
            body: Array("this proxy does not forward to that target\n".utf8))
    }

    /// §4.3: the target's 2xx/3xx/4xx/5xx unmodified (status, body, its Content-Type); a 2xx that is
    /// not an Oblivious DoH message is 502 with Proxy-Status http_protocol_error.
    static func passBack(_ answer: HTTPServerResponse) -> HTTPServerResponse {
        let type = answer.header("Content-Type")?.lowercased() ?? ""
        if (200..<300).contains(answer.status), type != ObliviousDoH.mediaType {
            return HTTPServerResponse(
                status: 502, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Proxy-Status", "netext-odoh-proxy; error=http_protocol_error")],
                body: Array("the target did not answer with an Oblivious DoH message\n".utf8))
        }
        let passed = type == ObliviousDoH.mediaType || type.hasPrefix("text/plain") ? type : "application/octet-stream"
        return HTTPServerResponse(status: answer.status, headers: [("Content-Type", passed), ("Cache-Control", "no-cache, no-store")], body: answer.body)
    }

    /// `a=b&c=d`, percent-decoded (RFC 6570 form-style query expansion).
    static func queryVariables(_ query: String?) -> [String: String] {
        var variables: [String: String] = [:]
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0) }
            if parts.count == 2, variables[parts[0]] == nil { variables[parts[0]] = parts[1] }
        }
        return variables
    }
}
