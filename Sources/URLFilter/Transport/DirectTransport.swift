import Foundation
import HTTPServing

/// Sends requests straight to the service (the server sees the client's address;
/// `ObliviousTransport` is the private alternative), through `HTTPUpstream`: plain HTTP over
/// pooled keep-alive connections, HTTPS through URLSession.
public struct DirectTransport: ServiceTransport {
    let upstream: HTTPUpstream

    public init(timeout: Double = 30) {
        upstream = HTTPUpstream(timeout: timeout)
    }

    public func send(_ request: ServiceRequest) async throws(URLFilterError) -> ServiceResponse {
        do throws(HTTPUpstream.Failure) {
            return try await upstream.exchange(method: request.method, url: request.url, headers: request.headers, body: request.body)
        } catch { throw .transport("\(request.url.host ?? request.url.absoluteString): \(error)") }
    }
}
