import Foundation
import Testing

/// `netext relay …` against a real netextd: the relay settings saved, shown (header values
/// never), checked field by field, installed from a profile and switched off. The built-in relay
/// provider is not registered here (run, it would steer this machine's flows): enabling is
/// refused naming it, and the profile's enabled relays are kept but not put in force. The lab
/// (scripts/e2e/relay.sh) runs them.
@Suite("Relay configurations through netextd (netext relay, com.apple.relay.managed)", .enabled(if: isRoot, "needs root: starts netextd"))
struct RelayConfigurationTests {
    @Test("configure with a header file and a pinned key, show which names go through, disable; bad input refused naming the field; a profile's relays installed")
    func configureShowAndInstall() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let headers = daemon.root + "/relay-headers"
        try "# the relay's credential\nProxy-Authorization: Bearer do-not-print-7f3a\nX-Client: lab\n".write(toFile: headers, atomically: true, encoding: .utf8)
        let key = daemon.root + "/relay-key.pem"
        try "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2rx3bMhDkhq/ZYsWWIy2AZmHtiaS\njxDR19OYWuM2HB6IgWmSN0XLqb7SiWzEVzC4322J3BLE7y5wVwISJnybmA==\n-----END PUBLIC KEY-----\n"
            .write(toFile: key, atomically: true, encoding: .utf8)

        let configured = try await daemon.cli([
            "relay", "configure", "--relay", "https://relay.example.test:8443", "--match-domain", "office.example.test",
            "--exclude-fqdn", "login.office.example.test", "--header-file", headers, "--public-key", key, "--name", "Lab relay",
        ])
        #expect(configured.status == 0, "\(configured)")
        #expect(configured.stdout.contains("configured relays Lab relay ("), "\(configured)")
        #expect(configured.stdout.hasSuffix("https://relay.example.test:8443\n"), "\(configured)")
        // Relays run as a transparent proxy of the built-in provider: without its manifest,
        // enabling them is refused, naming it.
        for arguments in [["relay", "enable"], ["relay", "configure", "--relay", "https://relay.example.test:8443", "--match-domain", "office.example.test", "--enable"]] {
            let refused = try await daemon.cli(arguments)
            #expect(refused.status != 0 && refused.stderr.contains("no provider is registered for bundle identifier 'com.netext.relay'"), "\(arguments): \(refused)")
        }

        let shown = try await daemon.cli(["relay", "show", "--host", "wiki.office.example.test", "--host", "login.office.example.test", "--host", "www.example.org"])
        #expect(shown.status == 0, "\(shown)")
        for line in [
            "relays Lab relay (", "): disabled\n", "relay:       https://relay.example.test:8443", "headers:    Proxy-Authorization, X-Client (values not shown)",
            "pinned keys: 1", "takes:       office.example.test", "excluded:    login.office.example.test",
            "wiki.office.example.test: through the relays", "login.office.example.test: direct", "www.example.org: direct",
        ] {
            #expect(shown.stdout.contains(line), "missing '\(line)' in \(shown.stdout)")
        }
        let general = try await daemon.cli(["show", "Lab relay"])
        #expect(general.stdout.contains("kind:        relay") && general.stdout.contains("relay:       https://relay.example.test:8443"), "\(general)")
        for output in [configured.stdout, shown.stdout, general.stdout, daemon.log()] {
            #expect(!output.contains("do-not-print-7f3a"), "a header value was printed or logged")
        }
        let json = try await daemon.cli(["relay", "show", "--json", "--host", "a.office.example.test"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        let hosts = try #require(object["hosts"] as? [[String: Any]])
        #expect(hosts.first?["throughRelays"] as? Bool == true)

        // Each refusal names what is wrong, and nothing is saved.
        let refusals: [([String], String)] = [
            (["relay", "configure", "--relay", "http://relay.example.test"], "relays[0].http2RelayURL: 'http://relay.example.test' is not an https URL"),
            (["relay", "configure", "--relay", "https://r.example.test", "--match-domain", "not a domain"], "matchDomains: 'not a domain' is not a domain name"),
            (["relay", "configure"], "name at least one relay with --relay URL"),
        ]
        for (arguments, message) in refusals {
            let refused = try await daemon.cli(arguments)
            #expect(refused.status != 0, "\(arguments) was accepted")
            #expect(refused.stderr.contains(message), "\(arguments): \(refused.stderr)")
        }
        try "Proxy-Authorization Bearer x\n".write(toFile: headers, atomically: true, encoding: .utf8)
        let badHeaders = try await daemon.cli(["relay", "configure", "--relay", "https://r.example.test", "--header-file", headers])
        #expect(badHeaders.status != 0 && badHeaders.stderr.contains("line 1: expected 'Name: value'"), "\(badHeaders)")
        let unchanged = try await daemon.cli(["relay", "show"])
        #expect(unchanged.stdout.contains("https://relay.example.test:8443") && unchanged.stdout.contains("takes:       office.example.test"),
                "a refused change left the settings as they were: \(unchanged)")

        let disabled = try await daemon.cli(["relay", "disable"])
        #expect(disabled.status == 0 && disabled.stdout.contains("relays Lab relay disabled"), "\(disabled)")

        // A Privacy Pass issuer: its credential read from standard input into the secret store,
        // never shown; without it on standard input the command refuses.
        let issuerArguments = ["relay", "configure", "--relay", "https://relay.example.test:8443", "--privacy-pass-issuer", "https://issuer.example.test"]
        let noCredential = try await daemon.cli(issuerArguments)
        #expect(noCredential.status != 0 && noCredential.stderr.contains("--privacy-pass-token-stdin is required with an issuer"), "\(noCredential)")
        let badIssuer = try await daemon.cli(["relay", "configure", "--relay", "https://relay.example.test:8443", "--privacy-pass-issuer", "http://issuer.example.test",
                                              "--privacy-pass-token-stdin"], stdin: "issuer-secret-5b2c\n")
        #expect(badIssuer.status != 0 && badIssuer.stderr.contains("privacyPassIssuerURL: 'http://issuer.example.test' must be https"), "\(badIssuer)")
        let withIssuer = try await daemon.cli(issuerArguments + ["--privacy-pass-token-stdin"], stdin: "issuer-secret-5b2c\n")
        #expect(withIssuer.status == 0, "\(withIssuer)")
        let issuerShown = try await daemon.cli(["relay", "show"])
        #expect(issuerShown.stdout.contains("tokens:      Privacy Pass from https://issuer.example.test (credential stored)"), "\(issuerShown)")
        let issuerJSON = try await daemon.cli(["relay", "show", "--json"])
        #expect(issuerJSON.stdout.contains("privacyPassTokenReference"), "\(issuerJSON)")
        // Saved again without a credential, the stored one stays.
        let resaved = try await daemon.cli(issuerArguments + ["--match-domain", "office.example.test"])
        #expect(resaved.status == 0, "\(resaved)")
        let stillStored = try await daemon.cli(["relay", "show"])
        #expect(stillStored.stdout.contains("(credential stored)") && stillStored.stdout.contains("takes:       office.example.test"), "\(stillStored)")
        for output in [withIssuer.stdout, issuerShown.stdout, issuerJSON.stdout, resaved.stdout, daemon.log()] {
            #expect(!output.contains("issuer-secret-5b2c"), "the issuer's credential was printed or logged")
        }

        // The profile's chain of two arrives whole, enabled; without the built-in provider it
        // cannot be put in force, and netextd says why.
        let installed = try await daemon.cli(["profile", "install", fixturesDirectory + "/profiles/relay.mobileconfig"])
        #expect(installed.status == 0, "\(installed)")
        let said = await waitUntil(timeout: 10) { daemon.log().contains("relays could not be put in force") }
        #expect(said && daemon.log().contains("com.netext.relay"), "\(daemon.log())")
        let fromProfile = try await daemon.cli(["show", "Office relay"])
        #expect(fromProfile.status == 0, "\(fromProfile)")
        for line in ["relay 1:     https://edge.example.net:8443", "HTTP/3:     https://edge.example.net (kept, not used: no QUIC here)",
                     "relay 2:     https://inner.example.net/masque/udp/{target_host}/{target_port}/ (reached through relay 1)",
                     "headers:    Proxy-Authorization (values not shown)", "excluded:    public.office.example.com, login.office.example.com"] {
            #expect(fromProfile.stdout.contains(line), "missing '\(line)' in \(fromProfile.stdout)")
        }
        let list = try await daemon.cli(["list"])
        #expect(list.stdout.contains("Office relay"), "\(list)")
        let profileJSON = try await daemon.cli(["list", "--json"])
        let items = try #require(try JSONSerialization.jsonObject(with: Data(profileJSON.stdout.utf8)) as? [[String: Any]])
        let relays = items.compactMap { $0["configuration"] as? [String: Any] }.filter { ($0["profileIdentifier"] as? String) == "com.example.relay" }
        #expect(relays.count == 1, "\(profileJSON.stdout)")
        let chain = ((relays.first?["protocolConfiguration"] as? [String: Any])?["settings"] as? [String: Any])?["relays"] as? [[String: Any]]
        #expect(chain?.count == 2, "\(profileJSON.stdout)")
        #expect(!daemon.log().contains("8c1f0e"), "the profile's header value is not logged")
    }
}
