import NetExtCore

/// What a connect-ip request asks to reach, read from and written to the default URI template
/// path of RFC 9484 §3: `/.well-known/masque/ip/{target}/{ipproto}/`. The target is `*` (any
/// destination), an IP address or prefix (its `/` and an IPv6 address's colons percent-encoded,
/// `192.0.2.0%2F24`, `2001%3Adb8%3A%3A%2F32`), or a DNS name; the IP protocol is `*` or a number
/// from 0 to 255 (RFC 9484 §3: the packets' IPv4 Protocol or IPv6 Next Header).
public struct ConnectIPScope: Sendable, Hashable, CustomStringConvertible {
    public enum Target: Sendable, Hashable {
        case any
        /// An address is a prefix of its full length.
        case prefix(IPPrefix)
        /// A name, in lower case.
        case name(String)
    }

    public let target: Target
    /// nil: every protocol.
    public let ipProtocol: UInt8?

    /// The path's fixed start.
    public static let pathPrefix = "/.well-known/masque/ip/"

    public init(target: Target = .any, ipProtocol: UInt8? = nil) {
        self.target = target
        self.ipProtocol = ipProtocol
    }

    /// Reads a request's `:path` (a query, if any, is ignored: the template has none).
    public init(path: String) throws(ConnectIPScopeError) {
        let withoutQuery = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        guard withoutQuery.hasPrefix(Self.pathPrefix) else { throw .notConnectIPPath(path) }
        // target, ipproto, then the empty part after the trailing slash (the template ends in "/").
        let parts = withoutQuery.dropFirst(Self.pathPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].isEmpty else { throw .notConnectIPPath(path) }
        target = try Self.target(String(parts[0]))
        let protocolText = String(parts[1])
        if protocolText == "*" {
            ipProtocol = nil
        } else {
            guard (1...3).contains(protocolText.utf8.count), protocolText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let number = UInt8(protocolText) else { throw .invalidProtocol(protocolText) }
            ipProtocol = number
        }
    }

    /// The request's `:path` for this scope.
    public var path: String {
        let targetText: String = switch target {
        case .any: "*"
        case .prefix(let prefix) where prefix.length == prefix.address.count * 8: prefix.addressText.templateEscaped()
        case .prefix(let prefix): prefix.description.templateEscaped()
        case .name(let name): name
        }
        return Self.pathPrefix + targetText + "/" + (ipProtocol.map(String.init) ?? "*") + "/"
    }

    public var description: String {
        let targetText: String = switch target {
        case .any: "any destination"
        case .prefix(let prefix): prefix.description
        case .name(let name): name
        }
        return targetText + ", " + (ipProtocol.map { "IP protocol \($0)" } ?? "every IP protocol")
    }

    /// Whether a packet to `destination` (4 or 16 bytes) of protocol `ipProtocol` is in scope.
    /// A name's scope is not decided here (the proxy resolves it); it admits no address.
    public func admits(destination: [UInt8], ipProtocol packetProtocol: UInt8) -> Bool {
        if let ipProtocol, ipProtocol != packetProtocol { return false }
        switch target {
        case .any: return true
        case .prefix(let prefix): return prefix.contains(IPPrefix(address: destination, length: destination.count * 8))
        case .name: return false
        }
    }

    private static func target(_ escaped: String) throws(ConnectIPScopeError) -> Target {
        if escaped == "*" { return .any }
        let text: String
        do { text = try PercentEncoding.decode(Substring(escaped)) } catch {
            if case .brokenEscape = error { throw .invalidTarget(escaped, "a % is not followed by two hex digits") }
            throw .invalidTarget(escaped, "its escapes are not UTF-8")
        }
        guard !text.isEmpty else { throw .invalidTarget(escaped, "it is empty") }
        if text.contains("/") {
            do { return .prefix(try IPPrefix(text, allowHostBits: false)) } catch {
                throw .invalidTarget(text, "it is not an IP prefix with its host bits zero (\(error))")
            }
        }
        if let address = IPPrefix.parseAddress(text) { return .prefix(IPPrefix(address: address, length: address.count * 8)) }
        guard !text.contains(":") else { throw .invalidTarget(text, "it has colons but is not an IPv6 address") }
        do { return .name(try ConnectUDPTarget(host: text, port: 1).host) } catch {
            throw .invalidTarget(text, "it is neither *, an IP address or prefix, nor a DNS name")
        }
    }
}

/// Why a connect-ip scope was refused (the relay answers 400 Bad Request).
public enum ConnectIPScopeError: Error, Sendable, Hashable, CustomStringConvertible {
    case notConnectIPPath(String)
    case invalidTarget(String, String)
    case invalidProtocol(String)

    public var description: String {
        switch self {
        case let .notConnectIPPath(path): "\"\(path)\" is not a connect-ip path (\(ConnectIPScope.pathPrefix){target}/{ipproto}/)"
        case let .invalidTarget(target, reason): "the target \"\(target)\" is not valid: \(reason)"
        case let .invalidProtocol(text): "the IP protocol \"\(text)\" is not * or a number from 0 to 255"
        }
    }
}
