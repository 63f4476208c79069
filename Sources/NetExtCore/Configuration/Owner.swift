/// Who created a configuration: the client's user id (from the kernel, `SO_PEERCRED`)
/// and the app identifier it declared when it connected.
///
/// An app sees and changes only the configurations whose owner matches it; root sees all.
public struct Owner: Sendable, Hashable, Codable, CustomStringConvertible {
    public var uid: UInt32
    public var appIdentifier: String

    public init(uid: UInt32, appIdentifier: String) {
        self.uid = uid
        self.appIdentifier = appIdentifier
    }

    public var description: String { "\(appIdentifier) (uid \(uid))" }

    /// The owner given to configurations installed from configuration profiles.
    public static func profile(uid: UInt32) -> Owner { Owner(uid: uid, appIdentifier: Owner.profileAppIdentifier) }

    /// The app identifier of profile-installed configurations.
    public static let profileAppIdentifier = "com.netext.profiles"
}
