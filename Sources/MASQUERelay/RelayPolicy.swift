import NetExtCore

/// Who may use the relay and where it may go. Nothing is allowed unless configured: a relay
/// with no allowed prefixes refuses every target (no open proxy by default), and one with tokens
/// answers 407 to a request without one of them.
public struct RelayPolicy: Sendable {
    /// The destinations a target's address must lie in.
    public var allowedTargets: [IPPrefix]
    /// Bearer credentials (`Proxy-Authorization: Bearer …`); empty: none asked.
    public var bearerTokens: [[UInt8]]

    public init(allowedTargets: [IPPrefix], bearerTokens: [String] = []) {
        self.allowedTargets = allowedTargets
        self.bearerTokens = bearerTokens.map { Array($0.utf8) }
    }

    /// Whether the relay may connect to `address` (4 or 16 bytes).
    public func allows(_ address: [UInt8]) -> Bool {
        allowedTargets.contains { $0.contains(IPPrefix(address: address, length: address.count * 8)) }
    }

    /// Whether the request's `proxy-authorization` (or `authorization`) value carries one of the
    /// tokens; true when none is asked. Every token is compared in full, in constant time.
    public func admits(authorization: String?) -> Bool {
        guard !bearerTokens.isEmpty else { return true }
        guard let authorization, authorization.utf8.count > 7, authorization.prefix(7).lowercased() == "bearer " else { return false }
        let offered = Array(authorization.utf8.dropFirst(7))
        var matched = false
        for token in bearerTokens where ConstantTime.equal(token, offered) { matched = true }
        return matched
    }
}
