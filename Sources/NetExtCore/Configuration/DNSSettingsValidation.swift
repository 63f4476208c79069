import Foundation

/// What makes system DNS settings usable, each refusal naming the field at fault.
enum DNSSettingsValidation {
    static func validate(_ settings: DNSSettingsProtocol) throws(NetExtError) {
        if settings.servers.isEmpty {
            switch settings.transport {
            case .overHTTPS:
                throw .invalid("servers must name the DNS-over-HTTPS server's addresses, so that its name is never looked up in the clear")
            default:
                throw .invalid("servers must name at least one DNS server")
            }
        }
        if settings.servers.count > 8 { throw .invalid("servers: at most 8 servers (\(settings.servers.count) given)") }
        for server in settings.servers where !IPAddressSyntax.isValid(server) {
            throw .invalid("servers: '\(server)' is not an IP address")
        }
        switch settings.transport {
        case .cleartext:
            if settings.serverName != nil { throw .invalid("serverName is for DNS over TLS; these settings are in the clear") }
            if settings.serverURL != nil { throw .invalid("serverURL is for DNS over HTTPS; these settings are in the clear") }
        case .overTLS:
            if settings.serverURL != nil { throw .invalid("serverURL is for DNS over HTTPS; these settings are DNS over TLS") }
            if let name = settings.serverName, !isHostName(name) {
                throw .invalid("serverName: '\(name)' is not a host name")
            }
        case .overHTTPS:
            guard let url = settings.serverURL else { throw .invalid("serverURL must be given for DNS over HTTPS") }
            guard let parsed = URL(string: url), parsed.scheme?.lowercased() == "https", let host = parsed.host, isHostName(host),
                  parsed.user == nil, parsed.query == nil, parsed.fragment == nil else {
                throw .invalid("serverURL: '\(url)' is not an https URL with a host name (and no query or credentials)")
            }
            if settings.serverName != nil { throw .invalid("serverName is for DNS over TLS; DNS over HTTPS takes the name from serverURL") }
        }
        for domain in settings.matchDomains where !domain.isEmpty && !isHostName(domain.hasPrefix(".") ? String(domain.dropFirst()) : domain) {
            throw .invalid("matchDomains: '\(domain)' is not a domain name")
        }
    }

    /// Letters, digits, '-' and '.', labels of 1–63, at most 253 in all, not an IP address.
    static func isHostName(_ text: String) -> Bool {
        guard !text.isEmpty, text.count <= 253, !IPAddressSyntax.isValid(text) else { return false }
        let trimmed = text.hasSuffix(".") ? String(text.dropLast()) : text
        return trimmed.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.count) && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
                && label.first != "-" && label.last != "-"
        }
    }
}
