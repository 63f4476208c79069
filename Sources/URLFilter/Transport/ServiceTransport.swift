import Foundation
import HTTPServing

/// One request to a URL filter service (PIR server, issuer), independent of how it travels.
public struct ServiceRequest: Sendable {
    public var method: String
    public var url: URL
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, url: URL, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// A service's answer: status, headers and body (the same shape the servers answer with).
public typealias ServiceResponse = HTTPServerResponse

extension HTTPServerResponse {
    /// The body as one line of text (at most 500 bytes), for error messages.
    public var message: String {
        String(decoding: body.prefix(500), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// How requests reach the services: directly (`DirectTransport`), or encapsulated through an
/// Oblivious HTTP relay (`ObliviousTransport`), optionally with Privacy Pass tokens attached
/// (`TokenAuthenticatingTransport`).
public protocol ServiceTransport: Sendable {
    func send(_ request: ServiceRequest) async throws(URLFilterError) -> ServiceResponse
}
