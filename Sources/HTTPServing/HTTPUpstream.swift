import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends requests to another server — the relay to its gateway, the gateway to its targets, an
/// origin to its issuer's directory, a client to the relay: plain HTTP over pooled keep-alive
/// connections (`PooledHTTPClient`), HTTPS through URLSession. Only the headers the caller names
/// are sent; no cookies, no cache, no credentials of its own.
public final class HTTPUpstream: Sendable {
    /// Why no answer came.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case timedOut(seconds: Int)
        case unreachable(String)

        public var description: String {
            switch self {
            case let .timedOut(seconds): "no answer within \(seconds) s"
            case let .unreachable(reason): "unreachable: \(reason)"
            }
        }
    }

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

    /// Sends one request and returns the answer, whatever its status; `headers` are the only
    /// header fields added by the caller.
    public func exchange(method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8]) async throws(Failure) -> HTTPServerResponse {
        if url.scheme == "http", let host = url.host {
            var target = url.path.isEmpty ? "/" : url.path
            if let query = url.query { target += "?" + query }
            do throws(PooledHTTPClient.Failure) {
                let answer = try await pool.send(method: method, host: host, port: url.port ?? 80, target: target, headers: headers, body: body)
                return HTTPServerResponse(status: answer.status, headers: answer.headers, body: answer.body)
            } catch {
                throw error == .timedOut ? .timedOut(seconds: Int(timeout)) : .unreachable("\(host): \(error)")
            }
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = timeout
        if !body.isEmpty || method == "POST" { request.httpBody = Data(body) }
        for (name, value) in headers { request.addValue(value, forHTTPHeaderField: name) }
        let data: Data, response: URLResponse
        do { (data, response) = try await session.data(for: request) } catch let error as URLError where error.code == .timedOut {
            throw .timedOut(seconds: Int(timeout))
        } catch { throw .unreachable(error.localizedDescription) }
        guard let http = response as? HTTPURLResponse else { throw .unreachable("answered without HTTP") }
        var fields: [(name: String, value: String)] = []
        for (name, value) in http.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            fields.append((name, value))
        }
        return HTTPServerResponse(status: http.statusCode, headers: fields, body: [UInt8](data))
    }

    /// As `exchange`, with failures answered 504 (timeout) or 502, so that a forwarding role
    /// always has a response to pass on.
    public func send(method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8]) async -> HTTPServerResponse {
        do throws(Failure) { return try await exchange(method: method, url: url, headers: headers, body: body) } catch {
            switch error {
            case .timedOut: return .text(504, "upstream did not answer within \(Int(timeout)) s")
            case .unreachable: return .text(502, "upstream unreachable")
            }
        }
    }
}
