import Foundation
import HTTPServing

/// One request to a URL filter service (PIR server, issuer), independent of how it travels.
/// Every request carries `userAgent` unless its headers name another.
public struct ServiceRequest: Sendable {
    /// Apple's PIR service refuses requests without a User-Agent (400 "Missing 'User-Agent'
    /// header") and reads the platform from it (`iOS/<major>.<minor>`) to decide which
    /// configuration features the client understands: fixed shard configurations and double-mod
    /// sharding arrived in iOS 18.2, and NetExt's client reads both. The same for every NetExt
    /// client, so it tells a server nothing about the device or user.
    public static let userAgent = "NetExt/1.0 (Linux; compatible; iOS/26.4)"

    public var method: String
    public var url: URL
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, url: URL, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        if !headers.contains(where: { $0.name.lowercased() == "user-agent" }) { self.headers.append(("User-Agent", Self.userAgent)) }
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
