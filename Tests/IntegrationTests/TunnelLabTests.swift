import Foundation
import Testing

/// The packet tunnel and the VPN lifecycle end to end in namespace labs (scripts/e2e/*.sh,
/// scripts/leak-test) and the README's demo, all with the binaries of this build.
@Suite("Packet tunnel in the lab", .enabled(if: isRoot, "needs root: creates network namespaces"), .serialized)
struct TunnelLabTests {
    static let root = repositoryRoot

    @Test("split tunnel, IPv6, MTU, large transfers both ways, masquerade, server restart, provider crash, unknown key")
    func endToEnd() async throws {
        try await runChecks("scripts/e2e/tunnel.sh", checks: 63, timeout: 300)
    }

    @Test("handshake floods from the internet (valid mac1; one reused cookie; random datagrams): the established tunnel keeps its pings, a reconnect completes during the flood, the per-source limit holds, drop reasons stay a short fixed list")
    func handshakeFloods() async throws {
        // Scaled down for CI (5,000/s for 5 s: a debug build with other suites on both cores
        // answers about that many cookies a second; a reconnect took 2.51 s once with the idle
        // lab beside it, hence 4 s; a phase whose ping loss is over 5 % gets a second look, after
        // a CI run lost 14 % in one that loses 0 % alone); scripts/attack runs 50,000/s for 10 s
        // against the release build with the bounds.
        let result = try await runChecks(
            "scripts/e2e/handshake-flood.sh", checks: 14, timeout: 180,
            environment: ["FLOOD_RATE": "5000", "MAX_LOSS_PERCENT": "5", "MAX_RECONNECT_MS": "4000", "FLOOD_SECOND_LOOK": "1"])
        #expect(result.stdout.contains("mac2_cookie_obtained=yes"))
    }

    @Test("DNS match domains: office names through the tunnel, every other name through the laptop's resolver")
    func dnsMatchDomains() async throws {
        try await runChecks("scripts/e2e/dns.sh", checks: 18, timeout: 180)
    }

    @Test("system DNS settings against unbound: names over TLS and over HTTPS (HTTP/2) with no DNS in the clear on the uplink, a dead server passed over, match domains, other programs' DNS refused (through a netextd crash), a wrong certificate and dead servers failing closed unless fallback is allowed")
    func encryptedDNS() async throws {
        try await runChecks("scripts/e2e/dns-encrypted.sh", checks: 67, timeout: 240)
    }

    @Test("under systemd-resolved (its D-Bus API mocked by python3-dbusmock, which refuses unknown and loopback links): the resolver file untouched, the stub on a link of its own given to resolved with the match domains as routing domains (or ~. and the default route), a query sent as resolved sends it answered over TLS through the DNS guard, the link reverted and gone on disable and with a killed netextd")
    func encryptedDNSUnderResolved() async throws {
        try await runChecks("scripts/e2e/dns-resolved.sh", checks: 37, timeout: 180)
    }

    @Test("Oblivious DoH (RFC 9230) through NetExt's proxy and target to unbound: names resolve with only HTTPS to the proxy on the uplink, no name in the proxy's log or on the wire, the target and unbound never seeing the laptop; a key change followed through a 401; a pinned foreign key failing closed; unknown targets refused by the proxy")
    func obliviousDNS() async throws {
        try await runChecks("scripts/e2e/dns-oblivious.sh", checks: 23, timeout: 180)
    }

    @Test("a DNS proxy provider answering every program's DNS (UDP, TCP, any server) over its own DoH to unbound: no DNS in the clear on the uplink, no name in the logs; a stop and a killed provider let DNS go direct with nothing left")
    func dnsProxy() async throws {
        try await runChecks("scripts/e2e/dns-proxy.sh", checks: 22, timeout: 180)
    }

    @Test("a DNS proxy bound to one app (per-app): that app's DNS (UDP and TCP) answered by the provider over DoH to unbound, another app's and every other program's through the laptop's resolver, the app's other connections direct; a stop leaves no steering")
    func dnsProxyForApps() async throws {
        try await runChecks("scripts/e2e/dns-proxy-apps.sh", checks: 18, timeout: 180)
    }

    @Test("captive portal detection against dnsmasq (DHCP option 114 by DHCPINFORM), the RFC 8908 API over TLS and a connectivity check on the interface: captive, logged in, expired; no portal, a malformed announcement, no DHCP server; bad requests refused; with a kill switch on, one user logs in past it and the VPN connects; netextd watching by itself; a hotspot helper logging in, maintaining and logging off by itself")
    func captivePortal() async throws {
        try await runChecks("scripts/e2e/captive-portal.sh", checks: 105, timeout: 300)
    }

    @Test("hotspot configurations through Debian's wpa_supplicant (its D-Bus API on a private bus, a veth named wlan0 with its wired driver): NetExt's blocks written to its file marked as NetExt's and enabled, WPA3 with protected management frames, enterprise, replacement, removal, a block NetExt did not write left alone; a Hotspot 2.0 credential through its control interface, Passpoint selection on, replaced, removed, another's credential left alone, MCC/MNC refused")
    func wifiThroughWPASupplicant() async throws {
        try await runChecks("scripts/e2e/wifi-wpa-supplicant.sh", checks: 24, timeout: 120)
    }

    @Test("hotspot configurations where iwd is the Wi-Fi service (its D-Bus API played by a stand-in on a private bus; iwd needs nl80211): the scan list, iwd's network files named and marked as iwd.network(5) says and root-only, the join they allow, a file NetExt did not write left alone, removal, WEP refused")
    func wifiThroughIWD() async throws {
        try await runChecks("scripts/e2e/wifi-iwd.sh", checks: 9, timeout: 120)
    }

    @Test("the hotspot demo: the portal found, the helper's login past the kill switch, the VPN up, nothing leaked on the laptop's link")
    func hotspotDemo() async throws {
        let result = try await run("/bin/bash", [repositoryRoot + "/scripts/demo-hotspot"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 240)
        #expect(result.status == 0, "\(result)")
        let last = result.stdout.split(separator: "\n").last.map(String.init)
        #expect(last == "hotspot: detected=yes authenticated=yes vpn=connected leaked_packets=0", "\(result)")
    }

    @Test("kill switch, excludeLocalNetworks and enforceRoutes: nothing leaks on the underlay, whatever happens to the provider or netextd")
    func killSwitch() async throws {
        let result = try await runChecks("scripts/e2e/killswitch.sh", checks: 29)
        #expect(result.stdout.contains("leaked_packets=0"))
    }

    @Test("per-app VPN: only the bound app's flows (IPv4, IPv6, DNS) go through the tunnel, a scope made later joins, an app launched earlier is steered once bound; exclude mode lets one app around a full tunnel and its kill switch; per-app on demand from the first flow; every table and cgroup removed")
    func perApp() async throws {
        try await runChecks("scripts/e2e/perapp.sh", checks: 91, timeout: 240)
    }

    @Test("app proxy: the bound app's TCP flows (IPv4, IPv6, by name) and UDP datagrams reach the destination through the provider and dante, another app's go direct; 50 MB intact; the provider's own connections not captured; kill -9 resets the apps' connections; nothing left after stop, the provider's death or netextd's crash")
    func appProxy() async throws {
        try await runChecks("scripts/e2e/appproxy.sh", checks: 84, timeout: 300)
    }

    @Test("network relays: the office's internal page (20 MB intact) and UDP echo through netext-server relay at its edge, carried by the built-in relay provider for office.test; an excluded name and other names direct; one TLS connection on the uplink and nothing for the internal host; a relay restart fails a flow cleanly and the next ones recover")
    func relays() async throws {
        try await runChecks("scripts/e2e/relay.sh", checks: 83, timeout: 420)
    }

    @Test("scripts/demo-relay shows the office's page and UDP echo through the relay, a public page direct, one TLS connection on the uplink, and pings through connect-ip")
    func relayDemo() async throws {
        let result = try await run("/bin/bash", [Self.root + "/scripts/demo-relay"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 240)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Office intranet: welcome"), "\(result.stdout)")
        #expect(result.stdout.contains("intranet.office.test: through the relays\nwww.public.test: direct"), "\(result.stdout)")
        #expect(result.stdout.contains("in 1 TCP connection(s); 0 packets for the internal host 10.20.0.5"), "\(result.stdout)")
        // connect-ip: an address from the pool, the office network advertised, pings answered.
        #expect(result.stdout.contains("assigned=10.77.0.2/32 request=0\nroutes=10.20.0.0-10.20.0.255/0\nreplies=3\nping=ok"), "\(result.stdout)")
        #expect(result.stdout.hasSuffix("relay: tcp=ok udp=ok connect-ip=ok tls=yes\n"), "\(result.stdout)")
    }

    @Test("scripts/demo-app-proxy shows the bound app through the SOCKS provider and dante, another program direct, and a transparent proxy taking one site")
    func appProxyDemo() async throws {
        let result = try await run("/bin/bash", [Self.root + "/scripts/demo-app-proxy"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 240)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("netext: running curl as org.example.Browser (through Office SOCKS)"))
        #expect(result.stdout.contains("203.0.113.2 - \"GET / HTTP/1.1\" 200 -\n198.51.100.2 - \"GET / HTTP/1.1\" 200 -"))
        #expect(result.stdout.contains("first flow of org.example.Browser (pid "))
        #expect(result.stdout.contains("tproxy ip to 127.0.0.1:"))
        #expect(result.stdout.contains("(netextd: declined=1 handled=1 sentDirect=1 )"))
        #expect(result.stdout.contains("echo received (through dante's UDP relay"))
        #expect(result.stdout.hasSuffix("app-proxy: proxied=2 direct=2 udp=ok\n"))
    }

    @Test("scripts/demo-dns resolves a name over TLS, one over HTTPS and one as Oblivious DoH through unbound with no DNS in the clear on the uplink")
    func encryptedDNSDemo() async throws {
        let result = try await run("/bin/bash", [Self.root + "/scripts/demo-dns"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 180)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("198.51.100.80   www.lab.test"))
        #expect(result.stdout.contains("server: tls://dns.lab.test@198.51.100.53:853"))
        #expect(result.stdout.contains("server: https://dns.lab.test/dns-query at 198.51.100.53"))
        #expect(result.stdout.contains("198.51.100.2 mail.lab.test. A IN"))
        #expect(result.stdout.contains("10.20.0.5       secret.lab.test"))
        #expect(result.stdout.contains("server: https://odoh-target.lab.test/dns-query through https://odoh-proxy.lab.test/dns-query at 198.51.100.56"))
        // The oblivious query reached unbound from the target's side, never from the laptop.
        #expect(result.stdout.contains("198.51.100.53 secret.lab.test. A IN") && !result.stdout.contains("198.51.100.2 secret.lab.test."))
        #expect(result.stdout.contains("to the target 198.51.100.55: 0 packets"))
        #expect(result.stdout.hasSuffix("dns: dot=ok doh=ok odoh=ok cleartext_packets=0\n"))
    }

    @Test("scripts/demo-perapp shows the bound app's page through the tunnel, the other program's failing, and an excluded app going around a full tunnel")
    func perAppDemo() async throws {
        let result = try await run("/bin/bash", [Self.root + "/scripts/demo-perapp"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 240)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("netext: running curl as org.example.Intranet (through Office Apps)"))
        #expect(result.stdout.contains("Office intranet: hello from 10.20.0.5"))
        #expect(result.stdout.contains("(unreachable: curl exit"))
        #expect(result.stdout.contains("203.0.113.2 - \"GET /public.html HTTP/1.1\" 200 -\n198.51.100.2 - \"GET /public.html HTTP/1.1\" 200 -"))
        #expect(result.stdout.contains("org.example.Backup  Everything  bypasses  connected"))
        #expect(result.stdout.contains("netext: running curl as org.example.Mail (through Office Apps)\nOffice intranet: hello from 10.20.0.5\n198.51.100.2 - \"GET /public.html"))
        #expect(result.stdout.contains("(the office resolver saw: intranet.office.test 1 from 10.99.0.2)"))
        #expect(result.stdout.contains("# SO_MARK\n0x800000\n"), "the app's sockets are marked at creation")
        #expect(result.stdout.contains("through for office.test (1 address answered)"))
        #expect(result.stdout.contains("== Done"))
    }

    @Test("roaming: a download through the tunnel survives the laptop moving to another uplink")
    func roaming() async throws {
        try await runChecks("scripts/e2e/roaming.sh", checks: 9, timeout: 180)
    }

    @Test("connect on demand: rules in order, re-evaluated on changes, a killed provider restarted, an explicit stop turns it off, SSID rules through NetworkManager's D-Bus API (python3-dbusmock), EvaluateConnection")
    func onDemand() async throws {
        try await runChecks("scripts/e2e/ondemand.sh", checks: 46)
    }

    @Test("a personal VPN (built-in IKEv2 through strongSwan) beside the enterprise tunnel: the enterprise tunnel wins where both route, the rest goes through the personal VPN; stop, server delete, killed charon or netextd, wrong secret, silent server, connect on demand")
    func personalAndEnterprise() async throws {
        try await runChecks("scripts/e2e/personal-vpn.sh", checks: 63, timeout: 180)
    }

    @Test("scripts/leak-test: nothing leaks through kill -9, on-demand restart and an uplink move")
    func leakTest() async throws {
        let result = try await run("/bin/bash", [Self.root + "/scripts/leak-test"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 240)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("leaked_packets=0"))
        #expect(result.stdout.contains("roamed=yes"))
    }

    @Test("the README's demo shows the page failing, then loading through the tunnel")
    func demo() async throws {
        let result = try await run("/bin/bash", [Self.root + "/scripts/demo"], environment: ["NETEXT_BIN_DIR": binaryDirectory], timeout: 300)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("(unreachable: curl exit"))
        #expect(result.stdout.contains("Office VPN: connected"))
        #expect(result.stdout.contains("Hello from 10.20.0.5, reached through the NetExt tunnel."))
        #expect(result.stdout.contains("  latest handshake: "), "netext status shows the tunnel in detail")
        #expect(result.stdout.contains("peer: laptop\n  public key: "), "netext-server tunnel show lists the peer")
        #expect(result.stdout.contains("== Done"))
    }
}

/// Issue 18, item 1: a healthy idle tunnel never reasserts, and a silent server is still noticed.
/// Its own suite, so its two idle minutes run beside the serialized tunnel labs instead of after
/// them.
@Suite("Tunnel liveness in the lab", .enabled(if: isRoot, "needs root: creates network namespaces"))
struct TunnelLivenessLabTests {
    @Test("an idle tunnel (IPv4 and IPv6) for 120 s: no status change, nothing link-scoped sent, traffic at once after; a silent server noticed after 15 s and the tunnel back when it answers")
    func idleTunnelStaysConnected() async throws {
        let result = try await runChecks("scripts/e2e/idle.sh", checks: 12, timeout: 330)
        #expect(result.stdout.contains("status_changes_idle_and_after=0"))
    }
}
