import NetExtCore

/// Where a connect-udp request asks to send datagrams, read from and written to the default URI
/// template path of RFC 9298 §2 and §3:
/// `/.well-known/masque/udp/{target_host}/{target_port}/`. The host is a DNS name, an IPv4
/// literal, or an IPv6 literal whose colons are percent-encoded (`2001%3Adb8%3A%3A42`, the
/// template's simple string expansion, RFC 6570 §3.2.2).
public struct ConnectUDPTarget: Sendable, Hashable, CustomStringConvertible {
    public enum HostKind: Sendable, Hashable {
        case name
        case ipv4
        case ipv6
    }

    /// The host as decoded: a name in lower case, or an address literal (IPv6 without brackets).
    public let host: String
    public let port: UInt16
    public let hostKind: HostKind

    /// The path's fixed start.
    public static let pathPrefix = "/.well-known/masque/udp/"

    /// A target from a host (name or literal; IPv6 with or without brackets) and a port.
    public init(host: String, port: UInt16) throws(ConnectUDPTargetError) {
        var host = host
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard port != 0 else { throw .invalidPort("0") }
        self.port = port
        (self.host, hostKind) = try Self.classify(host)
    }

    /// Reads a request's `:path` (a query, if any, is ignored: the template has none).
    public init(path: String) throws(ConnectUDPTargetError) {
        let withoutQuery = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        guard withoutQuery.hasPrefix(Self.pathPrefix) else { throw .notConnectUDPPath(path) }
        let rest = withoutQuery.dropFirst(Self.pathPrefix.count)
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        // host, port, then the empty part after the trailing slash (the template ends in "/").
        guard parts.count == 3, parts[2].isEmpty else { throw .notConnectUDPPath(path) }
        let host: String
        do { host = try PercentEncoding.decode(parts[0]) } catch {
            switch error {
            case .brokenEscape: throw .invalidHost(String(parts[0]), "a % is not followed by two hex digits")
            case .notUTF8: throw .invalidHost(String(parts[0]), "its escapes are not UTF-8")
            }
        }
        let portText = String(parts[1])
        guard (1...5).contains(portText.utf8.count), portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let port = UInt16(portText), port != 0 else { throw .invalidPort(portText) }
        try self.init(host: host, port: port)
    }

    /// The request's `:path` for this target.
    public var path: String {
        Self.pathPrefix + host.templateEscaped() + "/\(port)/"
    }

    /// The `:path` for this target from a relay's own URI template (RFC 9298 §2): its
    /// `{target_host}` and `{target_port}` filled in, an IPv6 address's colons as `%3A`.
    public func path(template: String) -> String {
        template.replacingOccurrences(of: "{target_host}", with: host.templateEscaped())
            .replacingOccurrences(of: "{target_port}", with: String(port))
    }

    public var description: String { hostKind == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    private static func classify(_ host: String) throws(ConnectUDPTargetError) -> (String, HostKind) {
        guard !host.isEmpty else { throw .invalidHost(host, "it is empty") }
        if host.contains(":") {
            guard IPPrefix.parseAddress(host)?.count == 16 else { throw .invalidHost(host, "it has colons but is not an IPv6 address") }
            return (host.lowercased(), .ipv6)
        }
        if IPPrefix.parseAddress(host)?.count == 4 { return (host, .ipv4) }
        // A name: letters, digits and hyphens in labels of 1 to 63 characters, at most 253 in all
        // (RFC 1123 §2.1), one trailing dot allowed.
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        guard name.utf8.count <= 253 else { throw .invalidHost(host, "a name is at most 253 characters") }
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard (1...63).contains(label.utf8.count) else { throw .invalidHost(host, "each label of a name has 1 to 63 characters") }
            guard label.utf8.allSatisfy({ isLetterOrDigit($0) || $0 == 0x2D }), label.utf8.first != 0x2D, label.utf8.last != 0x2D else {
                throw .invalidHost(host, "a name holds only letters, digits and inner hyphens")
            }
        }
        if name.utf8.allSatisfy({ (0x30...0x39).contains($0) || $0 == 0x2E }) {
            throw .invalidHost(host, "it is all digits but not an IPv4 address")
        }
        return (name.lowercased(), .name)
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}

/// Why a connect-udp target was refused (the relay answers 400 Bad Request).
public enum ConnectUDPTargetError: Error, Sendable, Hashable, CustomStringConvertible {
    case notConnectUDPPath(String)
    case invalidHost(String, String)
    case invalidPort(String)

    public var description: String {
        switch self {
        case let .notConnectUDPPath(path): "\"\(path)\" is not a connect-udp path (\(ConnectUDPTarget.pathPrefix){target_host}/{target_port}/)"
        case let .invalidHost(host, reason): "the target host \"\(host)\" is not valid: \(reason)"
        case let .invalidPort(port): "the target port \"\(port)\" is not a number from 1 to 65535"
        }
    }
}

extension String {
    /// The text as a URI template's simple string expansion needs it here (RFC 6570 §3.2.2):
    /// an IPv6 address's colons and a prefix's slash percent-encoded, the rest as it is.
    func templateEscaped() -> String {
        var out = ""
        for character in self {
            switch character {
            case ":": out += "%3A"
            case "/": out += "%2F"
            default: out.append(character)
            }
        }
        return out
    }
}
