import Foundation
import NetExtCore

// The methods on apps and per-app routing (docs/control-protocol.md, "Messages").

/// Moves the calling process (the pid the kernel reports for the connection, never one the
/// caller names) into its app's cgroup, so that every socket it and its children open from now
/// on is steered as the app's (`netext run --app ID -- command`).
public struct PlaceInApp: ControlMethod {
    public typealias Result = AppPlacement
    public static let name = "placeInApp"
    public var app: String
    /// The program the caller is about to run (checked against a rule's `matchPath`).
    public var executable: String?
    public init(app: String, executable: String?) {
        self.app = app
        self.executable = executable
    }
}

/// Where the caller was placed, and the tunnel its app is bound to, if any.
public struct AppPlacement: Sendable, Hashable, Codable {
    public var cgroup: String
    public var configurationName: String?
    public var mode: FlowSteering.Mode?
    public init(cgroup: String, configurationName: String?, mode: FlowSteering.Mode?) {
        self.cgroup = cgroup
        self.configurationName = configurationName
        self.mode = mode
    }
}

/// The apps bound to the enabled tunnels the caller may see, with their live cgroups.
public struct ListApps: ControlMethod {
    public typealias Result = AppList
    public static let name = "listApps"
    public init() {}
}

public struct AppList: Sendable, Hashable, Codable {
    public var apps: [AppBindingStatus]
    public init(apps: [AppBindingStatus]) { self.apps = apps }
}
