import Foundation
import NetExtCore
import NetExtTestSupport
import ServiceMetrics
import Testing
@testable import NetExtDaemon

/// `netextd --metrics-listen`: control requests, status transitions and sessions by status.
@Suite("netextd metrics")
struct DaemonMetricsTests {
    @Test("requests by method and result, transitions by status, disconnects by code, sessions by status; never a configuration's name")
    func recordsAndCollects() {
        let exporter = PrometheusExporter(descriptions: DaemonMetrics.descriptions)
        let metrics = DaemonMetrics(factory: exporter)
        metrics.countConfigurations { 2 }
        metrics.recordRequest(method: "listConfigurations", result: "ok", nanoseconds: 200_000)
        metrics.recordRequest(method: "startConnection", result: "permissionDenied", nanoseconds: 1_000_000)
        let office = UUID(), home = UUID()
        metrics.recordStatus(StatusInfo(id: office, name: "Office VPN", kind: .tunnelProvider, isEnabled: true, status: .connecting))
        metrics.recordStatus(StatusInfo(id: office, name: "Office VPN", kind: .tunnelProvider, isEnabled: true, status: .connected))
        metrics.recordStatus(StatusInfo(
            id: home, name: "Home VPN", kind: .tunnelProvider, isEnabled: true, status: .disconnected,
            lastDisconnectError: NetExtError(.connectionFailed, "no answer from 203.0.113.9")))
        metrics.collect()
        var text = exporter.render()
        #expect(PrometheusExposition.problems(in: text).isEmpty, "\(PrometheusExposition.problems(in: text))\n\(text)")
        #expect(exporter.undescribedNames.isEmpty)
        #expect(text.contains("netext_daemon_control_requests_total{method=\"listConfigurations\",result=\"ok\"} 1\n"), "\(text)")
        #expect(text.contains("netext_daemon_control_requests_total{method=\"startConnection\",result=\"permissionDenied\"} 1\n"))
        #expect(text.contains("netext_daemon_control_request_duration_seconds_count{method=\"startConnection\"} 1\n"))
        #expect(text.contains("netext_daemon_status_changes_total{status=\"connected\"} 1\n"))
        #expect(text.contains("netext_daemon_disconnects_total{code=\"connectionFailed\"} 1\n"))
        #expect(text.contains("netext_daemon_sessions{status=\"connected\"} 1.0\n") && text.contains("netext_daemon_sessions{status=\"disconnected\"} 1.0\n"))
        #expect(text.contains("netext_daemon_sessions{status=\"connecting\"} 0.0\n"), "the configuration moved on from connecting")
        #expect(text.contains("netext_daemon_configurations 2.0\n"))
        for leak in ["Office", "Home", "203.0.113.9", office.uuidString] { #expect(!text.contains(leak), "\(leak) in the metrics") }

        // A removed configuration counts in no status.
        metrics.forget(home)
        metrics.collect()
        text = exporter.render()
        #expect(text.contains("netext_daemon_sessions{status=\"disconnected\"} 0.0\n"), "\(text)")
    }
}
