/// The page a blocked cleartext HTTP request gets instead of the site: who blocked it, what was
/// blocked, and optionally a link to ask for access. Every inserted text is HTML-escaped.
public struct BlockPage: Sendable, Hashable {
    public var organization: String?
    public var blockedURL: String
    /// The "request access" link, if the configuration has one.
    public var requestAccess: (text: String, url: String)?

    public init(organization: String?, blockedURL: String, requestAccessText: String? = nil, requestAccessURL: String? = nil) {
        self.organization = organization
        self.blockedURL = blockedURL
        if let requestAccessURL, requestAccessURL.hasPrefix("http://") || requestAccessURL.hasPrefix("https://") || requestAccessURL.hasPrefix("mailto:") {
            requestAccess = (requestAccessText ?? "Request access", requestAccessURL)
        }
    }

    public static func == (lhs: BlockPage, rhs: BlockPage) -> Bool {
        lhs.organization == rhs.organization && lhs.blockedURL == rhs.blockedURL
            && lhs.requestAccess?.text == rhs.requestAccess?.text && lhs.requestAccess?.url == rhs.requestAccess?.url
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(organization)
        hasher.combine(blockedURL)
        hasher.combine(requestAccess?.url)
    }

    /// The HTML document (small enough for a few TCP segments).
    public var html: String {
        let who = organization.map(Self.escape) ?? "this device's content filter"
        var body = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
            <title>Blocked by \(who)</title>
            <style>body{font-family:system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
            main{max-width:34rem;margin:12vh auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 2px 12px #0002}
            h1{font-size:1.4rem;margin:0 0 1rem;color:#b3261e}code{word-break:break-all;background:#f0f0f3;padding:.1rem .3rem;border-radius:4px}
            a.request{display:inline-block;margin-top:1.2rem;padding:.6rem 1rem;background:#1d4ed8;color:#fff;border-radius:8px;text-decoration:none}</style>
            </head><body><main>
            <h1 id="title">This page is blocked</h1>
            <p id="organization">\(who) does not allow this page.</p>
            <p>Address: <code id="blocked-url">\(Self.escape(blockedURL))</code></p>
            """
        if let requestAccess {
            body += "\n<a class=\"request\" id=\"request-access\" href=\"\(Self.escape(requestAccess.url))\">\(Self.escape(requestAccess.text))</a>"
        }
        return body + "\n</main></body></html>\n"
    }

    /// The whole HTTP/1.1 response: 403, HTML, not cached, connection closed after it.
    public var httpResponse: [UInt8] {
        let document = Array(html.utf8)
        let head = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(document.count)\r\n"
            + "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + document
    }

    /// Escapes `&`, `<`, `>`, `"` and `'` for HTML text and attribute values.
    public static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
