/// The state of a configuration's connection, as Apple's `NEVPNStatus`.
public enum ConnectionStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// The configuration is not enabled (or is unknown).
    case invalid
    case disconnected
    case connecting
    case connected
    /// The connection is being re-established (e.g. after a network change).
    case reasserting
    case disconnecting

    /// Whether the connection holds or is acquiring resources.
    public var isActive: Bool {
        switch self {
        case .connecting, .connected, .reasserting, .disconnecting: true
        case .invalid, .disconnected: false
        }
    }
}
