import Foundation

/// What makes relay settings usable, each refusal naming the field at fault.
enum RelayValidation {
    static func validate(_ settings: RelayProtocol) throws(NetExtError) {
        if settings.relays.isEmpty { throw .invalid("relays must name at least one relay") }
        if settings.relays.count > RelayProtocol.maximumRelays {
            throw .invalid("relays: at most \(RelayProtocol.maximumRelays) relays can be chained (\(settings.relays.count) given)")
        }
        for (index, relay) in settings.relays.enumerated() {
            try validate(relay, field: "relays[\(index)]")
        }
        for (list, field) in [(settings.matchDomains, "matchDomains"), (settings.excludedDomains, "excludedDomains"),
                              (settings.matchFQDNs, "matchFQDNs"), (settings.excludedFQDNs, "excludedFQDNs")] {
            if list.count > 1_000 { throw .invalid("\(field): at most 1000 entries (\(list.count) given)") }
            for entry in list {
                let name = entry.hasPrefix(".") && field.hasSuffix("Domains") ? String(entry.dropFirst()) : entry
                guard DNSSettingsValidation.isHostName(name) else { throw .invalid("\(field): '\(entry)' is not a domain name") }
            }
        }
        if let issuer = settings.privacyPassIssuerURL { try checkIssuerURL(issuer) }
        if settings.appRules.count > TunnelProviderProtocol.maximumAppRules {
            throw .invalid("appRules: \(settings.appRules.count) rules; at most \(TunnelProviderProtocol.maximumAppRules) are accepted")
        }
        var seen = Set<AppIdentifier>()
        for rule in settings.appRules {
            if !seen.insert(rule.matchSigningIdentifier).inserted { throw .invalid("appRules: \(rule.matchSigningIdentifier) appears more than once") }
            if !rule.matchDomains.isEmpty {
                throw .invalid("appRules: matchDomains (\(rule.matchSigningIdentifier)) does not apply to relays; the relay settings' matchDomains choose the names")
            }
        }
    }

    /// An issuer's origin: https (plain http only on loopback, for development), a host, no
    /// path, query or credentials — the issuer's directory is at its well-known path (RFC 9578 §4)
    /// and challenges name its host.
    static func checkIssuerURL(_ text: String, field: String = "privacyPassIssuerURL") throws(NetExtError) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
              url.user == nil, url.password == nil, url.query == nil, url.fragment == nil else {
            throw .invalid("\(field): '\(text)' is not an https URL of the issuer's origin (https://HOST[:PORT])")
        }
        guard url.path.isEmpty || url.path == "/" else {
            throw .invalid("\(field): '\(text)' has a path; give the issuer's origin only (its directory is at /.well-known/private-token-issuer-directory)")
        }
        let loopback = host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw .invalid("\(field): '\(text)' must be https (plain http is taken only on loopback)")
        }
    }

    private static func validate(_ relay: RelayHop, field: String) throws(NetExtError) {
        guard relay.http2RelayURL != nil || relay.http3RelayURL != nil else {
            throw .invalid("\(field): give http2RelayURL or http3RelayURL")
        }
        if let url = relay.http3RelayURL {
            do { _ = try RelayURL(parsing: url) } catch { throw .invalid("\(field).http3RelayURL: \(error.message)") }
        }
        guard let http2 = relay.http2RelayURL else {
            throw .invalid("\(field): NetExt reaches relays over HTTP/2 only (no QUIC implementation is installable here), so http2RelayURL is required; it may be the same as http3RelayURL")
        }
        do { _ = try RelayURL(parsing: http2) } catch { throw .invalid("\(field).http2RelayURL: \(error.message)") }
        if let doh = relay.dnsOverHTTPSURL {
            try DNSSettingsValidation.checkHTTPSURL(doh, field: "\(field).dnsOverHTTPSURL")
        }
        for (name, value) in relay.additionalHTTPHeaderFields {
            try checkHeaderField(name: name, value: value, field: "\(field).additionalHTTPHeaderFields")
        }
        for (index, key) in relay.rawPublicKeys.enumerated() {
            guard let der = Data(base64Encoded: key), isDERSequence(der) else {
                throw .invalid("\(field).rawPublicKeys[\(index)]: not the base64 of a DER SubjectPublicKeyInfo (RFC 7250 §3)")
            }
        }
        if let identity = relay.identityReference {
            guard identity.hasPrefix("/"), !identity.split(separator: "/").contains("..") else {
                throw .invalid("\(field).identityReference: '\(identity)' is not an absolute path to a PEM file")
            }
        }
    }

    /// Fields HTTP/2 forbids or that the relay connection sets itself (RFC 9113 §8.2.2, §8.3).
    static let reservedHeaderNames: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "host", "content-length",
    ]

    /// A field name is an RFC 9110 §5.6.2 token; a value has no control characters and no
    /// whitespace at its ends (§5.5).
    static func checkHeaderField(name: String, value: String, field: String) throws(NetExtError) {
        let tokenSymbols = Set("!#$%&'*+-.^_`|~".utf8)
        let nameBytes = Array(name.utf8)
        guard !nameBytes.isEmpty, nameBytes.count <= 256,
              nameBytes.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || tokenSymbols.contains($0) }) else {
            throw .invalid("\(field): '\(name)' is not a header field name (letters, digits and !#$%&'*+-.^_`|~)")
        }
        if reservedHeaderNames.contains(name.lowercased()) {
            throw .invalid("\(field): '\(name)' cannot be added: HTTP/2 forbids it or the relay connection sets it")
        }
        let valueBytes = Array(value.utf8)
        if valueBytes.count > 8_192 { throw .invalid("\(field).\(name): the value is longer than 8192 bytes") }
        if valueBytes.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            throw .invalid("\(field).\(name): the value contains a control character (such as a line break)")
        }
        if let first = valueBytes.first, let last = valueBytes.last, [0x20, 0x09].contains(first) || [0x20, 0x09].contains(last) {
            throw .invalid("\(field).\(name): the value starts or ends with whitespace")
        }
    }

    /// Whether `der` is exactly one DER SEQUENCE (X.690 §8.1: tag 0x30, definite length).
    static func isDERSequence(_ der: Data) -> Bool {
        let bytes = [UInt8](der)
        guard bytes.count >= 2, bytes[0] == 0x30 else { return false }
        var length = Int(bytes[1])
        var offset = 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...3).contains(count), bytes.count >= 2 + count, bytes[2] != 0 else { return false }
            length = 0
            for byte in bytes[2..<(2 + count)] { length = length << 8 | Int(byte) }
            guard length >= 0x80 else { return false }
            offset += count
        }
        return offset + length == bytes.count
    }
}
