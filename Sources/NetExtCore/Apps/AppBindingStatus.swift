import Foundation

/// One app bound to a tunnel, as `netext apps` shows it: the configuration, whether its flows
/// go into the tunnel (include) or around it (exclude), the cgroups the app lives in now, and
/// whether the tunnel is connected.
public struct AppBindingStatus: Sendable, Hashable, Codable {
    public var app: String
    public var configuration: UUID
    public var configurationName: String
    public var mode: FlowSteering.Mode
    public var matchPath: String?
    /// Paths relative to the cgroup v2 root.
    public var cgroups: [String]
    public var isConnected: Bool
    /// The rule's `matchDomains` (nil: every destination).
    public var matchDomains: [String]?
    /// A domain-limited app: how many addresses DNS has answered for its domains so far (alive).
    public var learnedDestinations: Int?

    public init(
        app: String, configuration: UUID, configurationName: String, mode: FlowSteering.Mode, matchPath: String?, cgroups: [String], isConnected: Bool,
        matchDomains: [String]? = nil, learnedDestinations: Int? = nil
    ) {
        self.matchDomains = matchDomains
        self.learnedDestinations = learnedDestinations
        self.app = app
        self.configuration = configuration
        self.configurationName = configurationName
        self.mode = mode
        self.matchPath = matchPath
        self.cgroups = cgroups
        self.isConnected = isConnected
    }
}
