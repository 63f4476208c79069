import Foundation

/// A URL reduced to what the URL filter compares (docs/url-filter.md, "Keys"): no scheme, user
/// or port; the host lower-cased, NFC-normalized and Punycoded, without a trailing dot; the
/// path with dot segments removed; path, query and fragment percent-encoding normalized
/// (RFC 3986 §6.2.2: unreserved characters decoded, hex digits upper-cased, other bytes
/// outside the allowed set encoded). Building a database and checking a URL use this same
/// normalization.
public struct URLFilterKey: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    /// Empty or starting with "/".
    public let path: String
    public let query: String?
    public let fragment: String?

    public init(parsing text: String) throws(URLFilterError) {
        if let fast = Self.parseASCII(text) {
            self = fast
        } else {
            try self.init(parsingGeneral: text)
        }
    }

    /// The general path: any Unicode, user parts, IPv6 literals, and every error.
    init(parsingGeneral text: String) throws(URLFilterError) {
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        guard !rest.isEmpty else { throw .invalidURL(text, reason: "empty") }
        guard !rest.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == " " || $0.value == 0x7F }) else {
            throw .invalidURL(text, reason: "contains spaces or control characters")
        }
        if let range = rest.range(of: "://"), rest[..<range.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || "+.-".contains($0) }),
           rest.first?.isLetter == true {
            rest = rest[range.upperBound...]
        } else if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
        }
        let authorityEnd = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var hostPart: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .invalidURL(text, reason: "unclosed IPv6 literal") }
            hostPart = authority[...close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || (after.first == ":" && after.dropFirst().allSatisfy(\.isNumber)) else {
                throw .invalidURL(text, reason: "junk after the IPv6 literal")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            let port = authority[authority.index(after: colon)...]
            guard port.allSatisfy(\.isNumber) else { throw .invalidURL(text, reason: "port '\(port)' is not a number") }
            hostPart = authority[..<colon]
        } else {
            hostPart = authority
        }
        while hostPart.hasSuffix(".") { hostPart = hostPart.dropLast() }
        guard !hostPart.isEmpty else { throw .invalidURL(text, reason: "no host") }
        let lowered = String(hostPart).precomposedStringWithCanonicalMapping.lowercased()
        guard !lowered.contains("%"), !lowered.contains("*") else { throw .invalidURL(text, reason: "host contains '%' or '*'") }
        guard let ascii = Punycode.asciiHost(lowered) else { throw .invalidURL(text, reason: "host cannot be Punycoded") }
        guard ascii.count <= 253, ascii.split(separator: ".", omittingEmptySubsequences: false).allSatisfy({ !$0.isEmpty && $0.count <= 63 }) || ascii.hasPrefix("[") else {
            throw .invalidURL(text, reason: "host labels must be 1–63 characters, 253 in all")
        }
        guard ascii.hasPrefix("[") || ascii.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw .invalidURL(text, reason: "host has characters outside letters, digits, '-', '_' and '.'")
        }
        host = ascii
        var fragmentPart: Substring?
        if let hash = rest.firstIndex(of: "#") {
            fragmentPart = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        var queryPart: Substring?
        if let mark = rest.firstIndex(of: "?") {
            queryPart = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        path = URLFilterKey.removeDotSegments(URLFilterKey.normalizePercentEncoding(rest))
        query = queryPart.map { URLFilterKey.normalizePercentEncoding($0) }
        fragment = fragmentPart.map { URLFilterKey.normalizePercentEncoding($0) }
    }

    /// The record form: what a database stores for a list line.
    public var description: String {
        host + path + (query.map { "?" + $0 } ?? "") + (fragment.map { "#" + $0 } ?? "")
    }

    /// Hosts checked for this URL: every parent domain with at least two labels (so a record
    /// for `example.com` covers `a.b.example.com`), shortest first, at most 8 (the full host is
    /// always among them); IP literals and single labels only as themselves.
    public var checkedHosts: [String] {
        let labels = host.split(separator: ".")
        let isIPv4 = labels.count == 4 && labels.allSatisfy { $0.allSatisfy(\.isNumber) }
        guard !host.hasPrefix("["), !isIPv4, labels.count > 2 else { return [host] }
        var forms = (2...labels.count).map { labels.suffix($0).joined(separator: ".") }
        if forms.count > 8 { forms = Array(forms.prefix(7)) + [host] }
        return forms
    }

    /// Every key a record may equal to deny this URL, in Apple's documented order: for each host,
    /// the host with and without "/", each path prefix with and without a trailing "/", the URL
    /// up to the query with and without "/", and up to the fragment with and without "/".
    public var checkedKeys: [String] {
        var keys: [String] = []
        var seen = Set<String>()
        func add(_ key: String) { if seen.insert(key).inserted { keys.append(key) } }
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        for h in checkedHosts {
            add(h)
            add(h + "/")
            var prefix = ""
            for segment in segments {
                prefix += "/" + segment
                add(h + prefix)
                add(h + prefix + "/")
            }
            if let query {
                add(h + path + "?" + query)
                add(h + path + "?" + query + "/")
            }
            if let fragment {
                let base = h + path + (query.map { "?" + $0 } ?? "")
                add(base + "#" + fragment)
                add(base + "#" + fragment + "/")
            }
        }
        return keys
    }

    /// Byte classes as 256-entry tables: 1 = unreserved (RFC 3986 §2.3), 2 = kept literally
    /// besides (sub-delims, ":", "@", "/", "?"), 0 = escaped.
    static let byteClass: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 256)
        for byte in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8 { table[Int(byte)] = 1 }
        for byte in "!$&'()*+,;=:@/?".utf8 { table[Int(byte)] = 2 }
        return table
    }()
    static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// RFC 3986 §6.2.2.1–2: decode %XX of unreserved bytes, upper-case other escapes, and escape
    /// bytes outside the allowed set (including every non-ASCII UTF-8 byte). Text that needs
    /// none of that is returned as it is.
    static func normalizePercentEncoding(_ text: Substring) -> String {
        let table = byteClass
        if text.utf8.allSatisfy({ table[Int($0)] != 0 }) { return String(text) }
        let bytes = Array(text.utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count + 8)
        var i = 0
        func hex(_ b: UInt8) -> UInt8? {
            switch b {
            case 0x30...0x39: b - 0x30
            case 0x41...0x46: b - 0x41 + 10
            case 0x61...0x66: b - 0x61 + 10
            default: nil
            }
        }
        func escape(_ b: UInt8) { out += [0x25, hexDigits[Int(b >> 4)], hexDigits[Int(b & 0xF)]] }
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "%"), i + 2 < bytes.count, let hi = hex(bytes[i + 1]), let lo = hex(bytes[i + 2]) {
                let value = hi << 4 | lo
                if table[Int(value)] == 1 { out.append(value) } else { escape(value) }
                i += 3
            } else {
                if table[Int(b)] != 0 { out.append(b) } else { escape(b) }
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 3986 §5.2.4 remove_dot_segments, and runs of "/" collapsed to one (so every
    /// record's own form is among the keys checked for it).
    static func removeDotSegments(_ path: String) -> String {
        guard path.hasPrefix("/") else { return path }
        if !needsDotSegmentRemoval(path.utf8) { return path }
        var output: [Substring] = []
        var trailingSlash = false
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        for (index, part) in parts.enumerated().dropFirst() {
            let last = index == parts.count - 1
            switch part {
            case "" where !last: continue  // "//" collapses to "/"
            case ".": trailingSlash = last
            case "..":
                if !output.isEmpty { output.removeLast() }
                trailingSlash = last
            default:
                output.append(part)
                trailingSlash = false
            }
        }
        return "/" + output.joined(separator: "/") + (trailingSlash && !output.isEmpty ? "/" : "")
    }

    /// Whether a path has a "." or ".." segment or an empty one ("//"): the only inputs the
    /// removal changes.
    static func needsDotSegmentRemoval(_ bytes: some Sequence<UInt8>) -> Bool {
        var previous: UInt8 = 0, segmentLength = 0, dots = 0
        for byte in bytes {
            if byte == 0x2F {
                if previous == 0x2F || (segmentLength > 0 && segmentLength == dots && dots <= 2) { return true }
                segmentLength = 0
                dots = 0
            } else {
                segmentLength += 1
                if byte == 0x2E { dots += 1 }
            }
            previous = byte
        }
        return segmentLength > 0 && segmentLength == dots && dots <= 2
    }
}
