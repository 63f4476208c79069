import Foundation
import NetExtCore
import NetExtIPC

/// Controls and observes one configuration's connection, as Apple's `NEVPNConnection`.
public struct VPNConnection: Sendable {
    /// The connection to netextd the requests go through.
    public let client: ControlClient
    /// The configuration whose connection this is.
    public let configurationID: UUID

    /// The connection of the configuration `configurationID` (usually reached as a manager's
    /// `connection`).
    public init(client: ControlClient, configurationID: UUID) {
        self.client = client
        self.configurationID = configurationID
    }

    /// Starts the tunnel. `options` reach the provider's `startTunnel(options:)`; a `password`
    /// option is used instead of the stored one and never stored.
    public func startVPNTunnel(options: [String: JSONValue] = [:]) async throws(NetExtError) {
        _ = try await client.call(StartConnection(.id(configurationID), options: options), timeout: .seconds(60))
    }

    /// Stops the tunnel.
    public func stopVPNTunnel() async throws(NetExtError) {
        _ = try await client.call(StopConnection(.id(configurationID)), timeout: .seconds(60))
    }

    /// Sends bytes to the running provider's `handleAppMessage` and returns its answer (nil when
    /// it has none), as `NETunnelProviderSession.sendProviderMessage`. Fails with
    /// `configurationDisabled` when the tunnel is not running and `timedOut` when the provider
    /// does not answer within 10 s.
    public func sendProviderMessage(_ data: Data) async throws(NetExtError) -> Data? {
        try await client.call(SendProviderMessage(.id(configurationID), data: data), timeout: .seconds(15)).data
    }

    /// The current status, connected date, last error and byte counts.
    public func statusInfo() async throws(NetExtError) -> StatusInfo {
        let list = try await client.call(GetStatus(.id(configurationID)))
        guard let info = list.statuses.first else {
            throw .unknown("no configuration \(configurationID)")
        }
        return info
    }

    /// The current status (`NEVPNConnection.status`).
    public var status: ConnectionStatus {
        get async throws(NetExtError) { try await statusInfo().status }
    }

    /// Status changes of this connection, as they happen.
    public func statusUpdates() async throws(NetExtError) -> AsyncStream<StatusInfo> {
        let notifications = try await client.notifications()
        let id = configurationID
        return AsyncStream { continuation in
            let task = Task {
                for await notification in notifications {
                    if case .statusChanged(let change) = notification, change.current.id == id {
                        continuation.yield(change.current)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
