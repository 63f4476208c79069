import Foundation
import NetExtCore
import NetExtIPC
import Synchronization

/// Fans notifications out to subscribed control connections. Configuration changes go only to
/// clients that can see the configuration; status changes go to everyone (anyone may read status).
public final class NotificationHub: Sendable {
    /// A subscribed connection: who it is and how to deliver a frame's payload (the JSON, without
    /// the length) to it. `deliver` returns false when the client cannot keep up; it is then
    /// dropped.
    public struct Subscriber: Sendable {
        public var identity: ClientIdentity
        public var deliver: @Sendable (Data) -> Bool
        public init(identity: ClientIdentity, deliver: @escaping @Sendable (Data) -> Bool) {
            self.identity = identity
            self.deliver = deliver
        }
    }

    private let subscribers = Mutex<[UUID: Subscriber]>([:])
    /// Every status transition and removal passes here, so the metrics learn them here too.
    let metrics: DaemonMetrics

    public init(metrics: DaemonMetrics = DaemonMetrics()) {
        self.metrics = metrics
    }

    /// Adds a subscriber; returns the key to remove it with.
    public func add(_ subscriber: Subscriber) -> UUID {
        let key = UUID()
        subscribers.withLock { $0[key] = subscriber }
        return key
    }

    public func remove(_ key: UUID) {
        _ = subscribers.withLock { $0.removeValue(forKey: key) }
    }

    public var count: Int { subscribers.withLock { $0.count } }

    /// Announces a saved or removed configuration.
    public func configurationChanged(_ configuration: Configuration, change: ConfigurationChange.Change) {
        let event = ConfigurationChange(
            id: configuration.id, change: change, name: configuration.localizedDescription,
            configuration: change == .saved ? configuration : nil)
        if change == .removed { metrics.forget(configuration.id) }
        publish(.configurationChanged(event)) { $0.canSee(configuration) }
    }

    /// Announces a status transition.
    public func statusChanged(previous: ConnectionStatus, current: StatusInfo) {
        metrics.recordStatus(current)
        publish(.statusChanged(StatusChange(previous: previous, current: current))) { _ in true }
    }

    private func publish(_ notification: ControlNotification, to isRecipient: (ClientIdentity) -> Bool) {
        guard let frame = try? ControlProtocol.payload(NotificationEnvelope(notification)) else { return }
        let recipients = subscribers.withLock { $0.filter { isRecipient($0.value.identity) } }
        for (key, subscriber) in recipients where !subscriber.deliver(frame) {
            remove(key)
        }
    }
}
