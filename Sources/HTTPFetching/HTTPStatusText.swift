extension HTTPServerResponse {
    /// `HTTP 404`, or for a redirect, which NetExt's client never follows (a configured URL
    /// should name what it fetches), `HTTP 301 (redirects are not followed; the server points to
    /// https://…)`.
    public var statusText: String {
        guard (300..<400).contains(status), status != 304 else { return "HTTP \(status)" }
        guard let location = header("Location"), !location.isEmpty else { return "HTTP \(status) (a redirect, which is not followed)" }
        return "HTTP \(status) (redirects are not followed; the server points to \(location.prefix(200)))"
    }
}
