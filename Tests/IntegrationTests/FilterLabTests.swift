import Foundation
import Testing

/// The content filter end to end in a namespace lab (scripts/e2e/filter.sh) with the binaries
/// of this build: netextd, the sandboxed reference school filter, curl, ping and UDP probes.
@Suite("Content filter in the lab", .enabled(if: isRoot, "needs root: creates network namespaces"), .serialized)
struct FilterLabTests {
    @Test("verdicts by TLS server name, HTTP Host and URL, address; block page (curl and headless Chromium); TCP/UDP/ICMP, IPv4/IPv6, both directions; kernel-kept verdicts; sandbox; rules on the fly; stall and crash; clean disable")
    func endToEnd() throws {
        let result = try runChecks("scripts/e2e/filter.sh", checks: 47, timeout: 300)
        #expect(result.stdout.contains("packets queued for the 20 MB flow"))
    }

    @Test("control provider: needRules, then the fetched list; changes on the fly; malformed lists refused; its own traffic unfiltered")
    func controlProvider() throws {
        try runChecks("scripts/e2e/filter-control.sh", checks: 18, timeout: 240)
    }
}
