import NetExtCore
import NetExtLinux

/// Who a control connection belongs to: kernel-reported credentials plus the app identifier the
/// client declared in `hello`.
public struct ClientIdentity: Sendable, Hashable {
    public var credentials: PeerCredentials
    public var appIdentifier: String
    /// Root, or a member of the admin group (`netext` by default).
    public var mayModify: Bool

    public init(credentials: PeerCredentials, appIdentifier: String, adminGroupID: UInt32?) {
        self.credentials = credentials
        self.appIdentifier = appIdentifier
        self.mayModify = credentials.uid == 0 || adminGroupID.map { credentials.isMember(ofGroup: $0) } ?? false
    }

    public var uid: UInt32 { credentials.uid }
    public var isRoot: Bool { credentials.uid == 0 }
    public var owner: Owner { Owner(uid: uid, appIdentifier: appIdentifier) }

    /// An app sees only the configurations it created; root sees all.
    public func canSee(_ configuration: Configuration) -> Bool {
        isRoot || configuration.owner == owner
    }
}
