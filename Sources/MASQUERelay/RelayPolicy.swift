import HTTPServing
import NetExtCore

/// Who may use the relay and where it may go. Nothing is allowed unless configured: a relay
/// with no allowed prefixes refuses every target (no open proxy by default), and one with tokens
/// (bearer, or Privacy Pass through `privateTokens`) answers 407 to a request without one.
public struct RelayPolicy: Sendable {
    /// The destinations a target's address must lie in.
    public var allowedTargets: [IPPrefix]
    /// Bearer credentials (`Proxy-Authorization: Bearer …`); empty: none asked.
    public var bearerTokens: [[UInt8]]
    /// Privacy Pass (RFC 9577): the verifier that redeems `PrivateToken` credentials; nil: none
    /// taken.
    public var privateTokens: (any HTTPRequestAuthorizer)?

    public init(allowedTargets: [IPPrefix], bearerTokens: [String] = [], privateTokens: (any HTTPRequestAuthorizer)? = nil) {
        self.allowedTargets = allowedTargets
        self.bearerTokens = bearerTokens.map { Array($0.utf8) }
        self.privateTokens = privateTokens
    }

    /// Whether any credential is asked for.
    public var requiresCredential: Bool { !bearerTokens.isEmpty || privateTokens != nil }

    /// Whether the relay may connect to `address` (4 or 16 bytes).
    public func allows(_ address: [UInt8]) -> Bool {
        allowedTargets.contains { $0.contains(IPPrefix(address: address, length: address.count * 8)) }
    }

    /// Whether the request's `proxy-authorization` (or `authorization`) value carries one of the
    /// bearer tokens; true when no credential is asked. Every token is compared in full, in
    /// constant time. (A Privacy Pass token is redeemed by `privateTokens`, not here.)
    public func admits(authorization: String?) -> Bool {
        guard requiresCredential else { return true }
        guard let authorization, authorization.utf8.count > 7, authorization.prefix(7).lowercased() == "bearer " else { return false }
        let offered = Array(authorization.utf8.dropFirst(7))
        var matched = false
        for token in bearerTokens where ConstantTime.equal(token, offered) { matched = true }
        return matched
    }
}
