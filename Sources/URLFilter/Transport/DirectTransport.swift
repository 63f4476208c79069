import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends requests straight to the service over HTTP (the server sees the client's address;
/// `ObliviousTransport` is the private alternative).
public struct DirectTransport: ServiceTransport {
    let session: URLSession
    let timeout: Double

    public init(timeout: Double = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration)
        self.timeout = timeout
    }

    public func send(_ request: ServiceRequest) async throws(URLFilterError) -> ServiceResponse {
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
