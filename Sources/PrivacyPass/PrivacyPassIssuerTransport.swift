import Foundation

/// How a ``PrivacyPassClient`` reaches its issuer: one HTTP exchange at a time, over whatever
/// the caller chose (a direct HTTPS connection, an Oblivious HTTP relay). The client itself does
/// no I/O, so this module stays usable without a networking stack.
public protocol PrivacyPassIssuerTransport: Sendable {
    /// Sends one request to the issuer and returns its answer (any status: the client judges
    /// it). Throws ``PrivacyPassClient/Failure/transport(_:)`` when no answer came.
    func exchange(method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8]) async throws(PrivacyPassClient.Failure) -> PrivacyPassIssuerAnswer
}

/// An issuer's answer: its status and body.
public struct PrivacyPassIssuerAnswer: Sendable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }

    /// The body as one line of text (at most 500 bytes), for error messages.
    public var message: String {
        String(decoding: body.prefix(500), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Where a ``PrivacyPassClient`` keeps the tokens of a batch it has not handed out yet. A token
/// taken is gone from the cache before it is returned, so no token is ever spent twice.
public protocol PrivateTokenCache: Sendable {
    /// Removes and returns a token made for this challenge (its digest) and key (its id).
    func take(challengeDigest: [UInt8], keyID: [UInt8]) throws(PrivacyPassClient.Failure) -> PrivateToken?
    /// Adds tokens; those of keys not in `keepKeyIDs` (retired by the issuer) are dropped.
    func add(_ tokens: [PrivateToken], keepKeyIDs: Set<[UInt8]>?) throws(PrivacyPassClient.Failure)
    /// How many tokens are held for this challenge (its digest) and key (its id).
    func count(challengeDigest: [UInt8], keyID: [UInt8]) -> Int
}
