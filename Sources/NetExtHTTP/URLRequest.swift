import Foundation

/// A load to make: URL, method, header fields, body (Foundation's `URLRequest`, the parts
/// NetExtHTTP uses).
public struct URLRequest: Sendable, Equatable, Codable {
    public var url: URL
    public var httpMethod = "GET"
    public var allHTTPHeaderFields: [String: String] = [:]
    public var httpBody: Data?
    /// A file sent as the body, read as it goes (an upload from a file; Foundation's
    /// `httpBodyStream` for a file). `httpBody` wins when both are set.
    var bodyFile: String?
    /// Overrides the session's `timeoutIntervalForRequest` when set.
    public var timeoutInterval: Double?
    /// The page this load is for, which decides whether it is same-site for SameSite cookies
    /// (nil: same-site).
    public var mainDocumentURL: URL?
    /// `httpShouldHandleCookies`: send the storage's cookies and store the answer's.
    public var httpShouldHandleCookies = true

    public init(url: URL) { self.url = url }

    public mutating func setValue(_ value: String?, forHTTPHeaderField field: String) {
        for key in allHTTPHeaderFields.keys where key.lowercased() == field.lowercased() { allHTTPHeaderFields[key] = nil }
        if let value { allHTTPHeaderFields[field] = value }
    }
}

/// An answer: status, header fields, and what the connection negotiated.
public struct HTTPURLResponse: Sendable {
    /// The URL that answered (after redirects).
    public var url: URL
    public var statusCode: Int
    /// Header fields in the order received (names as sent).
    public var headerFields: [(name: String, value: String)]
    /// How this answer was fetched.
    public var metrics: URLSessionTaskTransactionMetrics

    /// The first value of a header field, its name matched without regard to case.
    public func value(forHTTPHeaderField field: String) -> String? {
        headerFields.first { $0.name.lowercased() == field.lowercased() }?.value
    }
}

/// Foundation's `URLSessionTaskTransactionMetrics`, the parts NetExtHTTP records, plus the ATS
/// decision.
public struct URLSessionTaskTransactionMetrics: Sendable {
    /// ALPN's name for the protocol: "h2" or "http/1.1".
    public var networkProtocolName: String
    /// "TLS 1.3", "TLS 1.2", …; nil for cleartext.
    public var negotiatedTLSProtocolVersion: String?
    public var isReusedConnection: Bool
    public var remoteAddress: String?
    /// The server's certificate, as ATS saw it (nil for cleartext or a reused connection's
    /// earlier handshake not kept).
    public var serverCertificate: CertificateFacts?
    /// The ATS rules the load was held to.
    public var appTransportSecurity: ATSRequirements
    /// The redirects followed before this answer.
    public var redirectCount: Int
}
