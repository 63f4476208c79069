import Foundation
import Testing

/// The content filter end to end in a namespace lab (scripts/e2e/filter.sh) with the binaries
/// of this build: netextd, the sandboxed reference school filter, curl, ping and UDP probes.
@Suite("Content filter in the lab", .enabled(if: isRoot, "needs root: creates network namespaces"), .serialized)
struct FilterLabTests {
    @Test("verdicts by TLS server name, HTTP Host and URL, address, names from DNS answers and QUIC Initials; block page (curl and headless Chromium); TCP/UDP/ICMP, IPv4/IPv6, both directions; kernel-kept verdicts; sandbox; rules on the fly; peek windows (keyword rules on HTTP answers); stall and crash; clean disable")
    func endToEnd() async throws {
        let result = try await runChecks("scripts/e2e/filter.sh", checks: 71, timeout: 300)
        #expect(result.stdout.contains("packets queued for the 20 MB flow"))
    }

    @Test("control provider: needRules, then the fetched list; changes on the fly; malformed lists refused; its own traffic unfiltered")
    func controlProvider() async throws {
        try await runChecks("scripts/e2e/filter-control.sh", checks: 18, timeout: 240)
    }

    @Test("personal firewall: per-program rules, one question per program and destination, answered by netext filter prompt (by number, while the flow waits, on the terminal); broken rules files left alone")
    func personalFirewall() async throws {
        try await runChecks("scripts/e2e/firewall.sh", checks: 23, timeout: 240)
    }

    @Test("scripts/demo-filter prints one verdict line per URL of the check file")
    func demo() async throws {
        let result = try await run("/bin/bash", [repositoryRoot + "/scripts/demo-filter"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 240)
        #expect(result.status == 0, "\(result)")
        let expected = [
            "https://www.games.test/ blocked", "https://games.test/play blocked", "https://videogames.test/ allowed",
            "http://social.test/feed blocked", "https://library.test/ allowed", "http://library.test/restricted/book.html blocked",
            "http://library.test/public/book.html allowed", "https://school.test/homework allowed",
        ]
        #expect(result.stdout.split(separator: "\n").map(String.init) == expected, "\(result.stdout)")
    }
}
