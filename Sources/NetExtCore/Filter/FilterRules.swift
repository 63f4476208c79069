/// A block list for the reference school filter, one rule a line:
/// - a host name (`example.com`) blocks it and its subdomains, on label boundaries;
/// - an address or prefix (`10.77.0.3`, `fd00:77::/64`) blocks flows to it, whatever protocol;
/// - a URL prefix (`http://example.com/private/`) blocks cleartext HTTP requests under it;
/// - `keyword:` and a phrase (`keyword:casino bonus`) blocks cleartext HTTP answers whose first
///   `FilterRules.keywordScanLimit` bytes contain it (ASCII letters compared case-insensitively).
/// Blank lines and `#` comments are ignored. Matching is case-insensitive for host names;
/// paths compare byte for byte.
public struct FilterRules: Sendable, Hashable {
    public private(set) var hosts: Set<String> = []
    public private(set) var prefixes: [IPPrefix] = []
    public private(set) var urlPrefixes: [String] = []
    /// Phrases looked for in cleartext HTTP answers, ASCII-lowercased.
    public private(set) var keywords: [[UInt8]] = []
    /// How much of an answer is read for keywords; beyond it the flow is allowed.
    public static let keywordScanLimit = 65_536
    /// The longest keyword accepted.
    public static let keywordLimit = 256

    public init() {}

    /// Parses rules text; a line that is none of the three forms is refused with its number.
    public init(text: String) throws(NetExtError) {
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if let hash = line.firstIndex(of: "#") { line = String(line[..<hash]).trimmingCharacters(in: .whitespaces) }
            guard !line.isEmpty else { continue }
            try add(line, at: "line \(index + 1)")
        }
    }

    /// Adds one rule; `place` names it in an error.
    public mutating func add(_ rule: String, at place: String) throws(NetExtError) {
        let lowered = rule.lowercased()
        if lowered.hasPrefix("keyword:") {
            let phrase = Array(rule.dropFirst(8).trimmingCharacters(in: .whitespaces).utf8).map(Self.asciiLowercased)
            guard !phrase.isEmpty, phrase.count <= Self.keywordLimit else {
                throw .invalid("\(place): '\(rule)' needs a phrase of 1–\(Self.keywordLimit) bytes after keyword:")
            }
            if !keywords.contains(phrase) { keywords.append(phrase) }
        } else if lowered.hasPrefix("http://") {
            let rest = rule.dropFirst(7)
            let hostEnd = rest.firstIndex(of: "/") ?? rest.endIndex
            let authority = rest[..<hostEnd].split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let host = HostName.normalized(String(authority[0])) else {
                throw .invalid("\(place): '\(rule)' does not name a host after http://")
            }
            var port = ""
            if authority.count == 2 {
                guard let number = UInt16(authority[1]), number > 0 else { throw .invalid("\(place): '\(rule)' has a port that is not 1–65535") }
                if number != 80 { port = ":\(number)" }
            }
            urlPrefixes.append("http://\(host)\(port)\(rest[hostEnd...].isEmpty ? "/" : String(rest[hostEnd...]))")
        } else if lowered.hasPrefix("https://") {
            throw .invalid("\(place): '\(rule)': paths of HTTPS requests are encrypted; block the host name instead")
        } else if let prefix = try? IPPrefix(rule.contains("/") ? rule : rule + (rule.contains(":") ? "/128" : "/32")) {
            prefixes.append(prefix)
        } else if let host = HostName.normalized(rule), host.contains(where: \.isLetter) || host.contains(".") {
            hosts.insert(host)
        } else {
            throw .invalid("\(place): '\(rule)' is not a host name, an address or prefix, or an http:// URL prefix")
        }
    }

    public var count: Int { hosts.count + prefixes.count + urlPrefixes.count + keywords.count }

    /// The longest keyword's length (0 without keywords).
    public var longestKeyword: Int { keywords.map(\.count).max() ?? 0 }

    /// The first keyword found in `bytes` (ASCII letters compared case-insensitively), if any.
    public func keyword(in bytes: [UInt8]) -> String? {
        guard !keywords.isEmpty else { return nil }
        let lowered = bytes.map(Self.asciiLowercased)
        for keyword in keywords where keyword.count <= lowered.count {
            let first = keyword[0]
            var index = 0
            while index <= lowered.count - keyword.count {
                if lowered[index] == first, lowered[index..<(index + keyword.count)].elementsEqual(keyword) {
                    return String(decoding: keyword, as: UTF8.self)
                }
                index += 1
            }
        }
        return nil
    }

    static func asciiLowercased(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte }

    /// The rule that blocks `flow`, if any (for the log), else nil.
    public func blockingRule(for flow: FilterFlow) -> String? {
        if let name = flow.remoteHostname {
            var candidate = Substring(name)
            while true {
                if hosts.contains(String(candidate)) { return String(candidate) }
                guard let dot = candidate.firstIndex(of: ".") else { break }
                candidate = candidate[candidate.index(after: dot)...]
            }
        }
        if let match = prefixes.first(where: { $0.contains(address: flow.remoteAddress) }) { return match.description }
        if let url = flow.url.flatMap(Self.normalizedURL) {
            if let match = urlPrefixes.first(where: { url.hasPrefix($0) }) { return match }
        }
        return nil
    }

    /// The verdict for `flow`: drop when a rule blocks it.
    public func verdict(for flow: FilterFlow) -> FilterVerdict {
        blockingRule(for: flow) == nil ? .allow : .drop
    }

    /// `http://Host/path` with the host lowercased, for comparison with URL rules.
    static func normalizedURL(_ url: String) -> String? {
        guard url.lowercased().hasPrefix("http://") else { return nil }
        let rest = url.dropFirst(7)
        let hostEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<hostEnd].lowercased()
        if authority.hasSuffix(":80") { authority.removeLast(3) }
        return "http://\(authority)\(rest[hostEnd...].isEmpty ? "/" : String(rest[hostEnd...]))"
    }
}
