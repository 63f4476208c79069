import HTTPFetching
/// One HTTP request as a handler sees it: method, path, query, headers and the whole body.
/// It deliberately carries no peer address, so nothing downstream can log or forward one.
public struct HTTPServerRequest: Sendable {
    public var method: String
    /// The path without the query string.
    public var path: String
    /// What followed `?`, if anything.
    public var query: String?
    /// Header fields in arrival order; names as sent. An HTTP/2 request's `:authority` is here
    /// as `host` when it carried no Host field (RFC 9113 §8.3.1), so handlers read the authority
    /// the same way for both versions; the other pseudo-header fields are not.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The HTTP major version it came in: 1 (HTTP/1.x) or 2 (a stream of an HTTP/2 connection).
    public var majorVersion: Int

    public init(method: String, path: String, query: String? = nil, headers: [(name: String, value: String)] = [], body: [UInt8] = [], majorVersion: Int = 1) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.majorVersion = majorVersion
    }

    /// The first value of a header (names compare case-insensitively).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Every value of a header, in order.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }
}
