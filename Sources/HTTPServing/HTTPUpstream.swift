import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends requests on to an upstream server (the relay to its gateway, the gateway to its
/// targets, an origin to its issuer's directory): plain HTTP over pooled keep-alive
/// connections (`PooledHTTPClient`), HTTPS through URLSession. Only the headers the caller names are sent;
/// no cookies, no cache, no credentials of its own. Upstream failures come back as 502/504
/// responses rather than errors, so a forwarding role always has an answer.
public final class HTTPUpstream: Sendable {
    let session: URLSession
    let pool: PooledHTTPClient
    let timeout: Double

    public init(timeout: Double = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpMaximumConnectionsPerHost = 16
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration)
        pool = PooledHTTPClient(timeout: timeout)
        self.timeout = timeout
    }

    /// Sends one request; `headers` are the only header fields added by the caller.
    public func send(method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8]) async -> HTTPServerResponse {
        if url.scheme == "http", let host = url.host {
            var target = url.path.isEmpty ? "/" : url.path
            if let query = url.query { target += "?" + query }
            do throws(PooledHTTPClient.Failure) {
                let answer = try await pool.send(method: method, host: host, port: url.port ?? 80, target: target, headers: headers, body: body)
                return HTTPServerResponse(status: answer.status, headers: answer.headers, body: answer.body)
            } catch {
                return error == .timedOut ? .text(504, "upstream did not answer within \(Int(timeout)) s") : .text(502, "upstream unreachable")
            }
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = timeout
        if !body.isEmpty || method == "POST" { request.httpBody = Data(body) }
        for (name, value) in headers { request.addValue(value, forHTTPHeaderField: name) }
        do {
            let (data, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse else { return .text(502, "upstream answered without HTTP") }
            var fields: [(name: String, value: String)] = []
            for (name, value) in http.allHeaderFields {
                guard let name = name as? String, let value = value as? String else { continue }
                fields.append((name, value))
            }
            return HTTPServerResponse(status: http.statusCode, headers: fields, body: [UInt8](data))
        } catch let error as URLError where error.code == .timedOut {
            return .text(504, "upstream did not answer within \(Int(timeout)) s")
        } catch {
            return .text(502, "upstream unreachable")
        }
    }
}
