import Foundation
import Testing

/// The packet tunnel end to end in a namespace lab (scripts/e2e/tunnel.sh) and the README's demo,
/// both with the binaries of this build.
@Suite("Packet tunnel in the lab", .enabled(if: isRoot, "needs root: creates network namespaces"), .serialized)
struct TunnelLabTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    @Test("split tunnel, IPv6, MTU, large transfer, server restart, provider crash, unknown key")
    func endToEnd() throws {
        let result = try run("/bin/bash", [Self.root + "/scripts/e2e/tunnel.sh"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 300)
        let failed = result.stdout.split(separator: "\n").filter { $0.hasPrefix("FAIL") }
        #expect(result.status == 0 && failed.isEmpty, "\(result)")
        #expect(result.stdout.contains("ALL CHECKS PASSED"))
        #expect(result.stdout.split(separator: "\n").filter { $0.hasPrefix("PASS") }.count >= 20, "\(result.stdout)")
    }

    @Test("DNS match domains: office names through the tunnel, every other name through the laptop's resolver")
    func dnsMatchDomains() throws {
        let result = try run("/bin/bash", [Self.root + "/scripts/e2e/dns.sh"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 180)
        let failed = result.stdout.split(separator: "\n").filter { $0.hasPrefix("FAIL") }
        #expect(result.status == 0 && failed.isEmpty, "\(result)")
        #expect(result.stdout.contains("ALL CHECKS PASSED"))
        #expect(result.stdout.split(separator: "\n").filter { $0.hasPrefix("PASS") }.count >= 15, "\(result.stdout)")
    }

    @Test("kill switch, excludeLocalNetworks and enforceRoutes: nothing leaks on the underlay, whatever happens to the provider or netextd")
    func killSwitch() throws {
        let result = try run("/bin/bash", [Self.root + "/scripts/e2e/killswitch.sh"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 240)
        let failed = result.stdout.split(separator: "\n").filter { $0.hasPrefix("FAIL") }
        #expect(result.status == 0 && failed.isEmpty, "\(result)")
        #expect(result.stdout.contains("leaked_packets=0"))
        #expect(result.stdout.split(separator: "\n").filter { $0.hasPrefix("PASS") }.count >= 25, "\(result.stdout)")
    }

    @Test("roaming: a download through the tunnel survives the laptop moving to another uplink")
    func roaming() throws {
        let result = try run("/bin/bash", [Self.root + "/scripts/e2e/roaming.sh"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 180)
        let failed = result.stdout.split(separator: "\n").filter { $0.hasPrefix("FAIL") }
        #expect(result.status == 0 && failed.isEmpty, "\(result)")
        #expect(result.stdout.contains("ALL CHECKS PASSED"))
    }

    @Test("connect on demand: rules in order, re-evaluated on changes, a killed provider restarted, an explicit stop turns it off")
    func onDemand() throws {
        let result = try run("/bin/bash", [Self.root + "/scripts/e2e/ondemand.sh"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 240)
        let failed = result.stdout.split(separator: "\n").filter { $0.hasPrefix("FAIL") }
        #expect(result.status == 0 && failed.isEmpty, "\(result)")
        #expect(result.stdout.contains("ALL CHECKS PASSED"))
    }

    @Test("scripts/leak-test: nothing leaks through kill -9, on-demand restart and an uplink move")
    func leakTest() throws {
        let result = try run("/bin/bash", [Self.root + "/scripts/leak-test"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 240)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("leaked_packets=0"))
        #expect(result.stdout.contains("roamed=yes"))
    }

    @Test("the README's demo shows the page failing, then loading through the tunnel")
    func demo() throws {
        let result = try run("/bin/bash", [Self.root + "/scripts/demo"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 300)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("(unreachable: curl exit"))
        #expect(result.stdout.contains("Office VPN: connected"))
        #expect(result.stdout.contains("Hello from 10.20.0.5, reached through the NetExt tunnel."))
        #expect(result.stdout.contains("== Done"))
    }
}
