import Foundation
import HTTPServing

/// Sends requests straight to the service (the server sees the client's address;
/// `ObliviousTransport` is the private alternative), through `HTTPUpstream`: HTTP and HTTPS
/// (the system's trust store) over pooled keep-alive connections.
public struct DirectTransport: ServiceTransport {
    let upstream: HTTPUpstream

    /// `tls`: whom https services must prove themselves to (default: the system's trust store).
    public init(timeout: Double = 30, tls: ClientTLS? = nil) {
        upstream = HTTPUpstream(timeout: timeout, tls: tls)
    }

    public func send(_ request: ServiceRequest) async throws(URLFilterError) -> ServiceResponse {
        do throws(HTTPUpstream.Failure) {
            return try await upstream.exchange(method: request.method, url: request.url, headers: request.headers, body: request.body)
        } catch {
            // A connect failure names the host and port already; a timeout does not.
            if case .timedOut = error { throw .transport("\(request.url.host ?? request.url.absoluteString): \(error)") }
            throw .transport("\(error)")
        }
    }
}
