import Synchronization

/// Foundation's `URLCredentialStorage`: credentials by protection space (host, port, protocol,
/// realm, method), each space with a default one, which a session sends when a server's Digest or
/// Basic challenge names that space and nobody answers otherwise.
///
/// A session keeps a credential its delegate gave that the server then accepted, unless its
/// persistence is `.none`. Kept in memory for the process's life: `.permanent` and
/// `.synchronizable` too, since Linux offers NetExt no keychain (the Secret Service needs D-Bus),
/// and a password is never written to disk.
public final class URLCredentialStorage: Sendable {
    private let spaces = Mutex<[URLProtectionSpace: Space]>([:])

    private struct Space {
        var byUser: [String: URLCredential] = [:]
        var defaultUser: String?
    }

    /// This process's storage (the default of ``URLSessionConfiguration/urlCredentialStorage``).
    public static let shared = URLCredentialStorage()

    /// An empty storage (an ephemeral session's).
    public init() {}

    /// Every space's credentials by user name.
    public var allCredentials: [URLProtectionSpace: [String: URLCredential]] {
        spaces.withLock { $0.compactMapValues { $0.byUser.isEmpty ? nil : $0.byUser } }
    }

    /// The space's credentials by user name, nil when it has none.
    public func credentials(for space: URLProtectionSpace) -> [String: URLCredential]? {
        spaces.withLock { $0[Self.key(space)]?.byUser }.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Keeps `credential` for the space (replacing the user's earlier one); the space's first
    /// becomes its default. A credential with persistence `.none` is not kept.
    public func set(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard credential.persistence != .none, credential.trust == nil else { return }
        spaces.withLock { spaces in
            spaces[Self.key(space), default: Space()].byUser[credential.user] = credential
            if spaces[Self.key(space)]?.defaultUser == nil { spaces[Self.key(space)]?.defaultUser = credential.user }
        }
    }

    /// Keeps `credential` and makes it the space's default.
    public func setDefaultCredential(_ credential: URLCredential, for space: URLProtectionSpace) {
        guard credential.persistence != .none, credential.trust == nil else { return }
        spaces.withLock { spaces in
            spaces[Self.key(space), default: Space()].byUser[credential.user] = credential
            spaces[Self.key(space)]?.defaultUser = credential.user
        }
    }

    /// The space's default credential, nil when it has none.
    public func defaultCredential(for space: URLProtectionSpace) -> URLCredential? {
        spaces.withLock { spaces in
            guard let entry = spaces[Self.key(space)], let user = entry.defaultUser else { return nil }
            return entry.byUser[user]
        }
    }

    /// Forgets the user's credential for the space (and it as the default).
    public func remove(_ credential: URLCredential, for space: URLProtectionSpace) {
        spaces.withLock { spaces in
            spaces[Self.key(space)]?.byUser[credential.user] = nil
            if spaces[Self.key(space)]?.defaultUser == credential.user { spaces[Self.key(space)]?.defaultUser = nil }
        }
    }

    /// Spaces are told apart by host (any case), port, protocol, realm and method.
    private static func key(_ space: URLProtectionSpace) -> URLProtectionSpace {
        var key = space
        key.host = space.host.lowercased()
        key.serverTrust = nil
        return key
    }
}
