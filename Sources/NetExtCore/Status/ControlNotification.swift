import Foundation

/// A notification netextd pushes to subscribed clients (on the control protocol:
/// `{"event": "...", "data": {...}}`).
public enum ControlNotification: Sendable, Hashable {
    case configurationChanged(ConfigurationChange)
    case statusChanged(StatusChange)
}

/// A configuration was saved or removed.
public struct ConfigurationChange: Sendable, Hashable, Codable {
    public enum Change: String, Sendable, Hashable, Codable { case saved, removed }
    public var id: UUID
    public var change: Change
    public var name: String
    /// The configuration after the change (nil when removed).
    public var configuration: Configuration?
    public init(id: UUID, change: Change, name: String, configuration: Configuration?) {
        self.id = id
        self.change = change
        self.name = name
        self.configuration = configuration
    }
}

/// A connection moved from one state to another.
public struct StatusChange: Sendable, Hashable, Codable {
    public var previous: ConnectionStatus
    public var current: StatusInfo
    public init(previous: ConnectionStatus, current: StatusInfo) {
        self.previous = previous
        self.current = current
    }
}
