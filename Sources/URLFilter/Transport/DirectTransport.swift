import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPServing

/// Sends requests straight to the service (the server sees the client's address;
/// `ObliviousTransport` is the private alternative): plain HTTP over pooled keep-alive
/// connections, HTTPS through URLSession.
public struct DirectTransport: ServiceTransport {
    let session: URLSession
    let pool: PooledHTTPClient
    let timeout: Double

    public init(timeout: Double = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration)
        pool = PooledHTTPClient(timeout: timeout)
        self.timeout = timeout
    }

    public func send(_ request: ServiceRequest) async throws(URLFilterError) -> ServiceResponse {
        if request.url.scheme == "http", let host = request.url.host {
            var target = request.url.path.isEmpty ? "/" : request.url.path
            if let query = request.url.query { target += "?" + query }
            do throws(PooledHTTPClient.Failure) {
                let answer = try await pool.send(method: request.method, host: host, port: request.url.port ?? 80, target: target, headers: request.headers, body: request.body)
                return ServiceResponse(status: answer.status, headers: answer.headers, body: answer.body)
            } catch { throw .transport("\(request.url.host ?? ""): \(error)") }
        }
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.timeoutInterval = timeout
        if request.method == "POST" || !request.body.isEmpty { urlRequest.httpBody = Data(request.body) }
        for (name, value) in request.headers { urlRequest.addValue(value, forHTTPHeaderField: name) }
        let data: Data, response: URLResponse
        do { (data, response) = try await session.data(for: urlRequest) } catch { throw .transport(error.localizedDescription) }
        guard let http = response as? HTTPURLResponse else { throw .transport("not an HTTP response") }
        var headers: [(name: String, value: String)] = []
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers.append((name, value)) }
        }
        return ServiceResponse(status: http.statusCode, headers: headers, body: [UInt8](data))
    }
}
