import Testing

/// A netext-server HTTP role without a certificate serves loopback only, unless told otherwise:
/// plain HTTP on a network address is refused before anything is bound, with a sentence saying
/// what to do; `--insecure-http` lets it through (then binding decides). 192.0.2.1 (TEST-NET-1)
/// is on no interface here, so nothing listens and nothing is sent in either case.
@Suite("netext-server: plain HTTP only on loopback")
struct ServerListenPolicyTests {
    @Test(arguments: [
        ["ohttp-relay", "--gateway", "http://127.0.0.1:9/gateway"],
        ["issuer", "--keys", "/nonexistent/keys", "--credentials", "/nonexistent/credentials"],
    ])
    func plainHTTPBeyondLoopbackIsRefusedWithoutInsecureHTTP(_ role: [String]) async throws {
        let server = binaryDirectory + "/netext-server"
        let refused = try await run(server, role + ["--listen", "192.0.2.1:18099"])
        #expect(refused.status == 64, "\(refused)")
        #expect(refused.stderr.contains("--listen 192.0.2.1:18099 is not a loopback address and no --tls-certificate is given"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--insecure-http"), "\(refused.stderr)")
        let allowed = try await run(server, role + ["--listen", "192.0.2.1:18099", "--insecure-http"])
        #expect(allowed.status != 0)
        #expect(!allowed.stderr.contains("not a loopback address"), "\(allowed.stderr)")
    }
}
