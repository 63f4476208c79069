import Testing

/// netextd and netext-server's HTTP roles as systemd runs them (scripts/e2e/lifecycle.sh):
/// readiness, SIGHUP reloads of certificates, credentials and manifests (refused reloads keep the
/// previous files), orderly stops, and `systemd-analyze verify` over every unit.
@Suite("service lifecycle lab")
struct ServiceLifecycleLabTests {
    @Test(.enabled(if: isRoot, "netextd runs in a namespace of its own"))
    func notifyReloadStopAndUnits() async throws {
        try await runChecks("scripts/e2e/lifecycle.sh", checks: 26, timeout: 240)
    }
}
