import Foundation

/// A relay's HTTP/2 URL taken apart: `https://HOST[:PORT]` and, optionally, the path of its
/// connect-udp resource as an RFC 9298 §2 URI template with `{target_host}` and
/// `{target_port}` (default `/.well-known/masque/udp/{target_host}/{target_port}/`).
public struct RelayURL: Sendable, Hashable {
    /// The relay's host: a name (sent as TLS SNI) or an address.
    public var host: String
    public var port: Int
    /// The connect-udp path template, both variables in it.
    public var udpPathTemplate: String

    public static let defaultUDPPathTemplate = "/.well-known/masque/udp/{target_host}/{target_port}/"

    /// Parses `text`, or says in a sentence what is wrong with it.
    public init(parsing text: String) throws(NetExtError) {
        // The template's braces are not URL characters: check the URL with them filled in.
        let variables = ["{target_host}", "{target_port}"]
        let present = variables.filter { text.contains($0) }
        if present.count == 1 {
            throw .invalid("'\(text)': a connect-udp URI template needs both {target_host} and {target_port} (RFC 9298 §2)")
        }
        let filled = text.replacingOccurrences(of: "{target_host}", with: "h").replacingOccurrences(of: "{target_port}", with: "1")
        if filled.contains("{") || filled.contains("}") {
            throw .invalid("'\(text)': the only URI template variables are {target_host} and {target_port} (RFC 9298 §2)")
        }
        guard let url = URL(string: filled), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty,
              url.user == nil, url.password == nil, url.query == nil, url.fragment == nil else {
            throw .invalid("'\(text)' is not an https URL with a host (and no credentials, query or fragment)")
        }
        let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard DNSSettingsValidation.isHostName(bareHost) || IPAddressSyntax.isValid(bareHost) else {
            throw .invalid("'\(text)': '\(bareHost)' is not a host name or address")
        }
        let port = url.port ?? 443
        guard (1...65_535).contains(port) else { throw .invalid("'\(text)': port \(port) is out of range") }
        self.host = bareHost
        self.port = port
        if present.isEmpty {
            udpPathTemplate = Self.defaultUDPPathTemplate
        } else {
            // The path as written, from the first '/' after the authority.
            let afterScheme = text.dropFirst("https://".count)
            udpPathTemplate = afterScheme.firstIndex(of: "/").map { String(afterScheme[$0...]) } ?? Self.defaultUDPPathTemplate
        }
    }
}
