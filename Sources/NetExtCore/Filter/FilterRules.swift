/// A block list for the reference school filter, one rule a line:
/// - a host name (`example.com`) blocks it and its subdomains, on label boundaries;
/// - an address or prefix (`10.77.0.3`, `fd00:77::/64`) blocks flows to it, whatever protocol;
/// - a URL prefix (`http://example.com/private/`) blocks cleartext HTTP requests under it.
/// Blank lines and `#` comments are ignored. Matching is case-insensitive for host names;
/// paths compare byte for byte.
public struct FilterRules: Sendable, Hashable {
    public private(set) var hosts: Set<String> = []
    public private(set) var prefixes: [IPPrefix] = []
    public private(set) var urlPrefixes: [String] = []

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
        if lowered.hasPrefix("http://") {
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

    public var count: Int { hosts.count + prefixes.count + urlPrefixes.count }

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
        if let address = IPPrefix.parseAddress(flow.remoteAddress) {
            let host = IPPrefix(address: address, length: address.count * 8)
            if let match = prefixes.first(where: { $0.isIPv6 == host.isIPv6 && $0.contains(host) }) { return match.description }
        }
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
