/// What `allowPortalLogin` did: which user may reach which interface past the kill switch, for how
/// long, and whether a kill switch was in force at all.
public struct PortalLoginGrant: Sendable, Hashable, Codable {
    public var user: String
    public var uid: UInt32
    public var interface: String
    /// 0: the login was ended.
    public var seconds: Int
    /// Whether a traffic guard (kill switch, enforced routes) was in force; without one nothing
    /// was blocked and the grant changes nothing until one is.
    public var guardInForce: Bool
    /// When ending: whether a login was in force for that user.
    public var ended: Bool

    public init(user: String, uid: UInt32, interface: String, seconds: Int, guardInForce: Bool, ended: Bool = false) {
        self.user = user
        self.uid = uid
        self.interface = interface
        self.seconds = seconds
        self.guardInForce = guardInForce
        self.ended = ended
    }

    /// The longest grant (an hour: a login page, not a way around the kill switch).
    public static let maximumSeconds = 3600
}
