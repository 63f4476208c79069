import Foundation

/// Foundation's `URLCredential`: a user name and password — for a server's Digest or Basic
/// challenge, or a proxy (`kCFProxyUsernameKey` and `kCFProxyPasswordKey` of
/// `connectionProxyDictionary`) — or trust in a server (`init(trust:)`). The password is never
/// written to a log or an error.
public struct URLCredential: Sendable, Hashable, Codable, CustomStringConvertible {
    public var user: String
    public var password: String

    /// For a server trust challenge (Foundation's `URLCredential(trust:)`): the delegate accepts
    /// the server with exactly these certificates.
    public var trust: ServerTrust?
    /// How long a session's ``URLCredentialStorage`` keeps it once a server accepted it.
    public var persistence: Persistence = .forSession

    /// Foundation's `URLCredential.Persistence`.
    public enum Persistence: String, Sendable, Hashable, Codable {
        /// Used for the load that was given it, never kept.
        case none
        /// Kept in the session's credential storage for later challenges of the same space.
        case forSession
        /// On Apple platforms, the keychain; here kept as `.forSession` (no keychain on Linux).
        case permanent
        /// On Apple platforms, iCloud's keychain; here kept as `.forSession`.
        case synchronizable
    }

    public init(user: String, password: String, persistence: Persistence = .forSession) {
        self.user = user
        self.password = password
        self.persistence = persistence
    }

    private enum CodingKeys: String, CodingKey { case user, password, trust, persistence }

    /// Reads what ``encode(to:)`` wrote; a credential written before `persistence` existed (a
    /// background task's proxy credential kept by the transfer service) reads as `.forSession`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        user = try container.decode(String.self, forKey: .user)
        password = try container.decode(String.self, forKey: .password)
        trust = try container.decodeIfPresent(ServerTrust.self, forKey: .trust)
        persistence = try container.decodeIfPresent(Persistence.self, forKey: .persistence) ?? .forSession
    }

    /// Accepts the server of a server trust challenge (`.useCredential` with it).
    public init(trust: ServerTrust) {
        user = ""
        password = ""
        self.trust = trust
    }

    /// The Basic scheme's credentials (RFC 7617 §2): "Basic " and base64 of user:password.
    var basicAuthorization: String { "Basic " + Data("\(user):\(password)".utf8).base64EncodedString() }

    public var description: String { trust.map { "trust in \($0.host)'s certificate" } ?? "user \(user) (password withheld)" }
}
