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

    public init(user: String, password: String) {
        self.user = user
        self.password = password
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
