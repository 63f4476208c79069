import CoreMetrics
import Foundation
import NetExtCore
import Synchronization

/// What netextd records (swift-metrics), exported only when `netextd --metrics-listen` asks for it:
/// control requests by method and result, status transitions, sessions by status, disconnects by
/// reason, configurations held. Configurations are never labels (their names are the user's);
/// methods, statuses and error codes are fixed sets.
public final class DaemonMetrics: Sendable {
    public static let descriptions: [MetricDescription] = [
        MetricDescription("netext_daemon_control_requests_total", "Control requests answered, by method and result (ok, or the error code)."),
        MetricDescription(
            "netext_daemon_control_request_duration_seconds", "Time netextd took to answer a control request, by method.",
            buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]),
        MetricDescription("netext_daemon_status_changes_total", "Connection status transitions, by the status entered."),
        MetricDescription("netext_daemon_disconnects_total", "Connections that ended with an error, by error code."),
        MetricDescription("netext_daemon_sessions", "Configurations by connection status (as last announced)."),
        MetricDescription("netext_daemon_configurations", "Configurations in the store."),
    ]

    private struct State {
        var requests: [String: Counter] = [:]
        var durations: [String: CoreMetrics.Timer] = [:]
        var entered: [ConnectionStatus: Counter] = [:]
        var disconnects: [String: Counter] = [:]
        var statusByConfiguration: [UUID: ConnectionStatus] = [:]
        var configurationCount: (@Sendable () -> Int?)?
    }

    private let factory: any MetricsFactory
    private let state = Mutex(State())
    private let sessions: [ConnectionStatus: Gauge]
    private let configurations: Gauge

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.factory = factory
        var sessions: [ConnectionStatus: Gauge] = [:]
        for status in ConnectionStatus.allCases {
            sessions[status] = Gauge(label: "netext_daemon_sessions", dimensions: [("status", status.rawValue)], factory: factory)
        }
        self.sessions = sessions
        configurations = Gauge(label: "netext_daemon_configurations", factory: factory)
    }

    /// One control request answered.
    func recordRequest(method: String, result: String, nanoseconds: UInt64) {
        let factory = self.factory
        let (counter, timer) = state.withLock { state in
            let key = method + " " + result
            let counter = state.requests[key] ?? Counter(
                label: "netext_daemon_control_requests_total", dimensions: [("method", method), ("result", result)], factory: factory)
            state.requests[key] = counter
            let timer = state.durations[method] ?? CoreMetrics.Timer(
                label: "netext_daemon_control_request_duration_seconds", dimensions: [("method", method)], factory: factory)
            state.durations[method] = timer
            return (counter, timer)
        }
        counter.increment()
        timer.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    /// A status transition announced.
    func recordStatus(_ info: StatusInfo) {
        let factory = self.factory
        let (entered, disconnect) = state.withLock { state in
            state.statusByConfiguration[info.id] = info.status
            let entered = state.entered[info.status] ?? Counter(
                label: "netext_daemon_status_changes_total", dimensions: [("status", info.status.rawValue)], factory: factory)
            state.entered[info.status] = entered
            var disconnect: Counter?
            if info.status == .disconnected, let error = info.lastDisconnectError {
                let code = error.code.name
                disconnect = state.disconnects[code] ?? Counter(label: "netext_daemon_disconnects_total", dimensions: [("code", code)], factory: factory)
                state.disconnects[code] = disconnect
            }
            return (entered, disconnect)
        }
        entered.increment()
        disconnect?.increment()
    }

    /// A configuration removed: it no longer counts in any status.
    func forget(_ id: UUID) { _ = state.withLock { $0.statusByConfiguration.removeValue(forKey: id) } }

    /// Where the configuration count comes from (the store; set by `Daemon.start`).
    func countConfigurations(with count: @escaping @Sendable () -> Int?) { state.withLock { $0.configurationCount = count } }

    /// Sets the gauges (before each rendering of the metrics).
    public func collect() {
        let (byStatus, count) = state.withLock { state in
            (Dictionary(grouping: state.statusByConfiguration.values, by: { $0 }).mapValues(\.count), state.configurationCount)
        }
        for (status, gauge) in sessions { gauge.record(byStatus[status] ?? 0) }
        if let configurationCount = count?() { configurations.record(configurationCount) }
    }
}
