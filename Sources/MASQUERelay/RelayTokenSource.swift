/// Where a relay client gets single-use credentials when a relay asks for them (407 with a
/// `Proxy-Authenticate` challenge, RFC 9110 §11.7.1): Privacy Pass tokens (RFC 9577) from an
/// issuer, fresh for each connection, so the relay cannot link two connections of one user.
public protocol RelayTokenSource: Sendable {
    /// A `Proxy-Authorization` value answering one of `challenges` (the relay's
    /// `Proxy-Authenticate` field values) from the relay at `relay` (`host:port`), or nil when
    /// none is a challenge this source answers. The challenge is remembered for ``credential(forKnownChallengeOf:)``.
    func credential(answering challenges: [String], relay: String) async throws -> String?

    /// A `Proxy-Authorization` value for the challenge `relay` sent before, so a new connection
    /// presents a token with its first request; nil when that relay has not asked for one yet.
    func credential(forKnownChallengeOf relay: String) async throws -> String?
}
