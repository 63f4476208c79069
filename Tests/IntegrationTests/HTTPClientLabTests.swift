import Testing

/// NetExtHTTP's App Transport Security against nginx in the lab (scripts/e2e/http-ats.sh): each
/// weak server refused by its rule, each exception lifting exactly its rule, pins, diagnose,
/// 100 loads on one HTTP/2 connection in a capture, stream tasks through both proxies and told of a
/// better route.
@Suite("HTTP client lab")
struct HTTPClientLabTests {
    @Test func appTransportSecurityAgainstNginx() async throws {
        try await runChecks("scripts/e2e/http-ats.sh", checks: 45, timeout: 300)
    }

    /// scripts/e2e/http-background.sh: a background download outliving its app, the transfer
    /// service killed and restarted, an address change, collection once, upload, refusals.
    @Test func backgroundSessionsThroughTheTransferService() async throws {
        try await runChecks("scripts/e2e/http-background.sh", checks: 14, timeout: 300)
    }

    @Test func demoCountsAllowedAndRefusedLoads() async throws {
        let result = try await run("/bin/bash", [repositoryRoot + "/scripts/demo-http"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 300)
        #expect(result.status == 0, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.last == "http: allowed=2 refused=6 h2=yes", "\(result)")
        for rule in ["cleartext HTTP", "TLS version", "forward secrecy", "key size", "signature hash"] {
            #expect(lines.contains { $0.contains("(rule: \(rule), policy: default)") }, "\(rule) in \(result)")
        }
        #expect(lines.contains { $0.contains("expired on 2021-01-01") }, "\(result)")
        #expect(lines.contains("result: needs NSExceptionDomains › tls10.lab.test › NSExceptionMinimumTLSVersion = TLSv1.0"), "\(result)")
    }
}
