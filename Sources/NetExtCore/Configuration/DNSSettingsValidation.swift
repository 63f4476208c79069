import Foundation

/// What makes system DNS settings usable, each refusal naming the field at fault.
enum DNSSettingsValidation {
    static func validate(_ settings: DNSSettingsProtocol) throws(NetExtError) {
        if settings.servers.isEmpty {
            switch settings.transport {
            case .overHTTPS:
                throw .invalid("servers must name the DNS-over-HTTPS server's addresses, so that its name is never looked up in the clear")
            case .oblivious:
                throw .invalid("servers must name the Oblivious DoH proxy's addresses, so that its name is never looked up in the clear")
            default:
                throw .invalid("servers must name at least one DNS server")
            }
        }
        if settings.servers.count > 8 { throw .invalid("servers: at most 8 servers (\(settings.servers.count) given)") }
        for server in settings.servers where !IPAddressSyntax.isValid(server) {
            throw .invalid("servers: '\(server)' is not an IP address")
        }
        if settings.transport != .oblivious {
            if settings.proxyURL != nil { throw .invalid("proxyURL is for Oblivious DoH; these settings are \(settings.transport.rawValue)") }
            if settings.obliviousConfigs != nil { throw .invalid("obliviousConfigs is for Oblivious DoH; these settings are \(settings.transport.rawValue)") }
        }
        if settings.httpMethod == .get && settings.transport != .overHTTPS {
            // RFC 9230 §4.1: Oblivious DoH queries are POSTed.
            throw .invalid("httpMethod GET is for DNS over HTTPS; these settings are \(settings.transport.rawValue)")
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
            try checkHTTPSURL(url, field: "serverURL")
            if settings.serverName != nil { throw .invalid("serverName is for DNS over TLS; DNS over HTTPS takes the name from serverURL") }
        case .oblivious:
            guard let url = settings.serverURL else { throw .invalid("serverURL must name the Oblivious DoH target's URL") }
            try checkHTTPSURL(url, field: "serverURL")
            guard let proxy = settings.proxyURL else { throw .invalid("proxyURL must name the Oblivious DoH proxy's URL") }
            try checkHTTPSURL(proxy, field: "proxyURL")
            if settings.serverName != nil { throw .invalid("serverName is for DNS over TLS; Oblivious DoH takes the names from serverURL and proxyURL") }
            if let configs = settings.obliviousConfigs {
                // RFC 9230 §5: ObliviousDoHConfigs<1..2^16-1>, its 2-byte length first.
                guard let bytes = Data(base64Encoded: configs), bytes.count > 2, Int(bytes[0]) << 8 | Int(bytes[1]) == bytes.count - 2 else {
                    throw .invalid("obliviousConfigs: not the base64 of an ObliviousDoHConfigs list (RFC 9230 §5)")
                }
            }
        }
        if let identity = settings.identityReference {
            guard settings.transport == .overTLS || settings.transport == .overHTTPS else {
                throw .invalid("identityReference is for DNS over TLS or HTTPS; these settings are \(settings.transport.rawValue)")
            }
            guard identity.hasPrefix("/"), !identity.split(separator: "/").contains("..") else {
                throw .invalid("identityReference: '\(identity)' is not an absolute path to a PEM file")
            }
        }
        for domain in settings.matchDomains where !domain.isEmpty && !isHostName(domain.hasPrefix(".") ? String(domain.dropFirst()) : domain) {
            throw .invalid("matchDomains: '\(domain)' is not a domain name")
        }
    }

    /// An https URL with a host name, no credentials, query or fragment.
    static func checkHTTPSURL(_ url: String, field: String) throws(NetExtError) {
        guard let parsed = URL(string: url), parsed.scheme?.lowercased() == "https", let host = parsed.host, isHostName(host),
              parsed.user == nil, parsed.query == nil, parsed.fragment == nil else {
            throw .invalid("\(field): '\(url)' is not an https URL with a host name (and no query or credentials)")
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
