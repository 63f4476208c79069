import Testing

/// The URL filter end to end in the lab (scripts/e2e/urlfilter.sh): netextd and the control
/// provider on the laptop, the Oblivious HTTP relay, and the gateway, PIR server and Privacy
/// Pass issuer on the provider side; verdicts, privacy captures, failure policy, token refill,
/// prefilter refresh.
@Suite("URL filter lab")
struct URLFilterLabTests {
    @Test func privateVerdictsEndToEnd() throws {
        try runChecks("scripts/e2e/urlfilter.sh", checks: 19, timeout: 400)
    }

    @Test func demoPrintsOneVerdictPerURL() throws {
        let result = try run(
            "/bin/bash", [repositoryRoot + "/scripts/demo-urlfilter", "--blocklist", repositoryRoot + "/examples/urlfilter/blocklist.txt",
                          "--check", repositoryRoot + "/examples/urlfilter/check.txt"],
            environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 300)
        #expect(result.status == 0, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines == [
            "https://ads.tracker.example/pixel.gif deny",
            "https://www.casino.example/ deny",
            "http://news.example/politics/2026/election.html deny",
            "https://news.example/sport/ allow",
            "https://www.wikipedia.example/wiki/Bloom_filter allow",
            "https://cdn.ads.tracker.example/x.js deny",
        ], "\(result)")
    }
}
