import Foundation

/// What netextd's captive portal monitor last found (`netext hotspot status`).
public struct CaptivePortalStatus: Sendable, Hashable, Codable {
    /// Whether netextd checks by itself on network changes (`--captive-portal-detection`).
    public var monitoring: Bool
    /// The last detection on the default route's interface, by the monitor or by a request.
    public var last: CaptivePortalDetection?
    public var checkedAt: Date?
    /// The hotspot helpers and their session, when any is installed and netextd monitors.
    public var helpers: HotspotHelperStatus?

    public init(monitoring: Bool, last: CaptivePortalDetection? = nil, checkedAt: Date? = nil, helpers: HotspotHelperStatus? = nil) {
        self.monitoring = monitoring
        self.last = last
        self.checkedAt = checkedAt
        self.helpers = helpers
    }
}
