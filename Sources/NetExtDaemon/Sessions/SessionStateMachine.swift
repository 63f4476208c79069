import Foundation
import NetExtCore
import NetExtIPC

/// The connection state of one configuration as a pure state machine: events in, actions out.
/// The `SessionManager` actor owns one per active configuration and performs the actions.
public struct SessionStateMachine: Sendable, Hashable {
    public private(set) var status: ConnectionStatus = .disconnected
    public private(set) var connectedDate: Date?
    public private(set) var lastDisconnectError: NetExtError?

    public enum Event: Sendable, Hashable {
        /// A client asked to start.
        case startRequested
        /// The provider's `startTunnel` returned.
        case providerStarted
        /// The provider could not be launched, its `startTunnel` threw, or it cancelled itself.
        case providerFailed(NetExtError)
        /// A client (or a configuration change) asked to stop.
        case stopRequested(ProviderStopReason)
        /// The provider acknowledged the stop.
        case providerStopped
        /// The provider process ended.
        case providerExited(String)
        /// The provider set `reasserting` (true: reconnecting; false: back).
        case providerReasserting(Bool)
    }

    public enum Action: Sendable, Hashable {
        case launchProvider
        case sendStop(ProviderStopReason)
        /// End the provider process (SIGTERM, then SIGKILL after a grace period).
        case terminateProvider
        /// Tell subscribers the status changed from the given one.
        case publishStatus(previous: ConnectionStatus)
    }

    public init() {}

    /// Applies an event and returns what must be done. Events that make no sense in the current
    /// state (a late message from a provider already stopped) change nothing.
    public mutating func handle(_ event: Event, now: Date = Date()) -> [Action] {
        let previous = status
        var actions: [Action] = []
        switch (status, event) {
        case (.disconnected, .startRequested), (.invalid, .startRequested):
            status = .connecting
            lastDisconnectError = nil
            actions = [.launchProvider]
        case (.connecting, .providerStarted), (.reasserting, .providerStarted):
            status = .connected
            connectedDate = now
        case (.connecting, .providerFailed(let error)), (.connected, .providerFailed(let error)), (.reasserting, .providerFailed(let error)):
            status = .disconnected
            connectedDate = nil
            lastDisconnectError = error
            actions = [.terminateProvider]
        case (.connecting, .stopRequested(let reason)), (.connected, .stopRequested(let reason)), (.reasserting, .stopRequested(let reason)):
            status = .disconnecting
            actions = [.sendStop(reason)]
        case (.disconnecting, .providerStopped):
            status = .disconnected
            connectedDate = nil
            actions = [.terminateProvider]
        case (.connected, .providerReasserting(true)):
            status = .reasserting
        case (.reasserting, .providerReasserting(false)):
            status = .connected
        case (.disconnecting, .providerExited), (.disconnecting, .providerFailed):
            status = .disconnected
            connectedDate = nil
        case (.connecting, .providerExited(let how)), (.connected, .providerExited(let how)), (.reasserting, .providerExited(let how)):
            status = .disconnected
            connectedDate = nil
            lastDisconnectError = NetExtError(.providerFailed, "the provider \(how)")
        default:
            return []
        }
        if status != previous { actions.append(.publishStatus(previous: previous)) }
        return actions
    }
}
