import Testing

/// The URL filter's database tool and PIR server, as binaries (scripts/e2e/pir.sh; loopback only).
@Suite("URL filter PIR tools")
struct PIRToolTests {
    @Test func buildServeQueryReload() async throws {
        try await runChecks("scripts/e2e/pir.sh", checks: 19, timeout: 300)
    }
}
