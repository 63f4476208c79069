import Testing

/// The URL filter end to end in the lab (scripts/e2e/urlfilter.sh): netextd and the control
/// provider on the laptop, the Oblivious HTTP relay, and the gateway, PIR server and Privacy
/// Pass issuer on the provider side; verdicts, privacy captures, failure policy, token refill,
/// prefilter refresh.
@Suite("URL filter lab")
struct URLFilterLabTests {
    @Test func privateVerdictsEndToEnd() async throws {
        try await runChecks("scripts/e2e/urlfilter.sh", checks: 22, timeout: 400)
    }

    /// The same path with every hop over TLS under a lab CA (scripts/e2e/urlfilter-tls.sh):
    /// prefilter over HTTPS, relay → gateway over HTTP/2, captures of every hop TLS only.
    @Test func privateVerdictsOverTLSOnEveryHop() async throws {
        try await runChecks("scripts/e2e/urlfilter-tls.sh", checks: 12, timeout: 300)
    }

    @Test func demoPrintsOneVerdictPerURL() async throws {
        let result = try await run(
            "/bin/bash", [repositoryRoot + "/scripts/demo-urlfilter", "--blocklist", repositoryRoot + "/examples/urlfilter/blocklist.txt",
                          "--check", repositoryRoot + "/examples/urlfilter/check.txt"],
            environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 300)
        #expect(result.status == 0, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines == [
            "https://cdn.ads.example/banner.js deny",
            "https://tracker.example/pixel/1.gif deny",
            "https://www.example.com/private/notes deny",
            "https://www.example.com/public/ allow",
            "https://Bücher.example/verboten?x=1 deny",
            "https://www.wikipedia.example/wiki/Bloom_filter allow",
        ], "\(result)")
    }
}
