import Foundation
import NetExtTestSupport
import Testing
@testable import NetExtCore

@Suite("Relay settings (NERelayManager): validation, domain matching, relay URLs, the com.apple.relay.managed payload")
struct RelaySettingsTests {
    let owner = Owner(uid: 0, appIdentifier: "com.netext.cli")
    static let key = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2rx3bMhDkhq/ZYsWWIy2AZmHtiaSjxDR19OYWuM2HB6IgWmSN0XLqb7SiWzEVzC4322J3BLE7y5wVwISJnybmA=="

    func configuration(_ settings: RelayProtocol, rules: [OnDemandRule] = []) -> Configuration {
        Configuration(owner: owner, localizedDescription: "relays", onDemandRules: rules, protocolConfiguration: .relay(settings))
    }

    func refusal(_ settings: RelayProtocol) -> String? {
        do { try configuration(settings).validate(); return nil } catch { return error.message }
    }

    static func app(_ identifier: String, domains: [String] = []) -> AppRule {
        try! AppRule(matchSigningIdentifier: try! AppIdentifier(identifier), matchDomains: domains)
    }

    @Test("a valid chain with headers, a pin, a DoH URL and domains passes")
    func validChain() throws {
        let settings = RelayProtocol(
            relays: [
                RelayHop(http3RelayURL: "https://edge.example.net", http2RelayURL: "https://edge.example.net:8443",
                         dnsOverHTTPSURL: "https://dns.example.net/dns-query", additionalHTTPHeaderFields: ["Proxy-Authorization": "Bearer x"]),
                RelayHop(http2RelayURL: "https://[2001:db8::1]:443/masque/{target_host}/{target_port}/", rawPublicKeys: [Self.key],
                         identityReference: "/etc/netext/relay-client.pem"),
            ],
            matchDomains: ["office.example.com", ".corp.example"], excludedDomains: ["public.office.example.com"],
            matchFQDNs: ["git.example.org"], excludedFQDNs: ["login.office.example.com"], privacyPassIssuerURL: "https://issuer.example.net")
        try configuration(settings).validate()
        // Plain http for an issuer on loopback (development), an address as the host.
        for issuer in ["http://127.0.0.1:8444", "https://10.0.0.7:8444/", "http://localhost:9000"] {
            try configuration(RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], privacyPassIssuerURL: issuer)).validate()
        }
    }

    @Test("each kind of bad setting is refused, naming the field", arguments: [
        (RelayProtocol(relays: []), "relays must name at least one relay"),
        (RelayProtocol(relays: Array(repeating: RelayHop(http2RelayURL: "https://r.example"), count: 5)), "at most 4 relays"),
        (RelayProtocol(relays: [RelayHop()]), "relays[0]: give http2RelayURL or http3RelayURL"),
        (RelayProtocol(relays: [RelayHop(http3RelayURL: "https://r.example")]), "relays[0]: NetExt reaches relays over HTTP/2 only"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "http://r.example")]), "relays[0].http2RelayURL: 'http://r.example' is not an https URL"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://u:p@r.example")]), "relays[0].http2RelayURL"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example/{target_host}/")]), "needs both {target_host} and {target_port}"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example/{target_host}/{target_port}/{x}")]), "the only URI template variables"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example:70000")]), "relays[0].http2RelayURL"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example", dnsOverHTTPSURL: "https://1.2.3.4/q")]), "relays[0].dnsOverHTTPSURL"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example", additionalHTTPHeaderFields: ["Bad Name": "v"])]), "'Bad Name' is not a header field name"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example", additionalHTTPHeaderFields: [":path": "/"])]), "is not a header field name"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example", additionalHTTPHeaderFields: ["Connection": "close"])]), "'Connection' cannot be added"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example", additionalHTTPHeaderFields: ["X-A": "a\r\nInjected: 1"])]), "X-A: the value contains a control character"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example", additionalHTTPHeaderFields: ["X-A": " padded"])]), "starts or ends with whitespace"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example", rawPublicKeys: ["bm90IGRlcg=="])]), "relays[0].rawPublicKeys[0]: not the base64 of a DER"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example", identityReference: "relative.pem")]), "identityReference: 'relative.pem' is not an absolute path"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], matchDomains: ["bad domain"]), "matchDomains: 'bad domain' is not a domain name"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], privacyPassIssuerURL: "http://issuer.example"), "privacyPassIssuerURL: 'http://issuer.example' must be https"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], privacyPassIssuerURL: "https://issuer.example/issue"), "privacyPassIssuerURL: 'https://issuer.example/issue' has a path"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], privacyPassIssuerURL: "https://u:p@issuer.example"), "privacyPassIssuerURL: 'https://u:p@issuer.example' is not an https URL of the issuer's origin"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], privacyPassIssuerURL: "issuer.example"), "is not an https URL of the issuer's origin"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], excludedFQDNs: ["10.0.0.1"]), "excludedFQDNs: '10.0.0.1' is not a domain name"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], appRules: [Self.app("org.example.A"), Self.app("org.example.A")]), "appRules: org.example.A appears more than once"),
        (RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], appRules: [Self.app("org.example.A", domains: ["a.example"])]), "matchDomains (org.example.A) does not apply to relays"),
    ])
    func refusals(settings: RelayProtocol, expected: String) {
        let message = refusal(settings)
        #expect(message?.contains(expected) == true, "got \(message ?? "no refusal")")
    }

    @Test("EvaluateConnection rules are refused for relays; Connect and Disconnect are taken")
    func rules() throws {
        let settings = RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")])
        try configuration(settings, rules: [OnDemandRule(action: .connect), OnDemandRule(action: .disconnect)]).validate()
        #expect(throws: NetExtError.self) { try configuration(settings, rules: [OnDemandRule(action: .evaluateConnection)]).validate() }
    }

    @Test("which names go through the relays: excluded wins, FQDNs exact, domains on label boundaries, empty lists take all")
    func matching() {
        let settings = RelayProtocol(
            relays: [RelayHop(http2RelayURL: "https://r.example")],
            matchDomains: ["office.example.com", ".corp.example"], excludedDomains: ["public.office.example.com"],
            matchFQDNs: ["git.example.org"], excludedFQDNs: ["login.office.example.com"])
        let cases: [(String, Bool)] = [
            ("office.example.com", true), ("WIKI.Office.Example.COM.", true), ("a.b.corp.example", true), ("corp.example", true),
            ("badoffice.example.com", false), ("example.com", false), ("public.office.example.com", false),
            ("x.public.office.example.com", false), ("login.office.example.com", false), ("a.login.office.example.com", true),
            ("git.example.org", true), ("sub.git.example.org", false), ("192.0.2.1", false), ("2001:db8::1", false),
        ]
        for (host, expected) in cases {
            #expect(settings.routesThroughRelays(host: host) == expected, "\(host)")
        }
        let everything = RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], excludedDomains: ["lan"])
        #expect(everything.routesThroughRelays(host: "anything.example"))
        #expect(everything.routesThroughRelays(host: "192.0.2.1"))
        #expect(!everything.routesThroughRelays(host: "printer.lan"))
    }

    @Test("matching agrees with a plain reference on random names (property)")
    func matchingProperty() {
        var generator = SplitMix64(state: 0x5EED_0022)
        let labels = ["a", "b", "corp", "office", "x-1", "example", "com"]
        func name() -> String {
            (0..<(1 + generator.below(4))).map { _ in labels[generator.below(labels.count)] }.joined(separator: ".")
        }
        for _ in 0..<500 {
            let match = (0..<generator.below(3)).map { _ in name() }
            let exclude = (0..<generator.below(3)).map { _ in name() }
            let settings = RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")], matchDomains: match, excludedDomains: exclude)
            for _ in 0..<10 {
                let host = name()
                let within = { (domain: String) in host == domain || host.hasSuffix("." + domain) }
                let expected = !exclude.contains(where: within) && (match.isEmpty || match.contains(where: within))
                #expect(settings.routesThroughRelays(host: host) == expected, "\(host) match \(match) exclude \(exclude)")
            }
        }
    }

    @Test("relay URLs: host, port, the default and a given connect-udp template")
    func relayURLs() throws {
        let plain = try RelayURL(parsing: "https://relay.example.net:8443")
        #expect(plain.host == "relay.example.net" && plain.port == 8443 && plain.udpPathTemplate == RelayURL.defaultUDPPathTemplate)
        let template = try RelayURL(parsing: "https://relay.example.net/proxy/{target_host}/{target_port}/")
        #expect(template.port == 443 && template.udpPathTemplate == "/proxy/{target_host}/{target_port}/")
        let v6 = try RelayURL(parsing: "https://[2001:db8::7]:4433")
        #expect(v6.host == "2001:db8::7" && v6.port == 4433)
        #expect(throws: NetExtError.self) { try RelayURL(parsing: "https://") }
        #expect(throws: NetExtError.self) { try RelayURL(parsing: "relay.example.net") }
    }

    @Test("settings survive a JSON round trip; a stored form without the optional keys decodes")
    func json() throws {
        let settings = RelayProtocol(
            relays: [RelayHop(http2RelayURL: "https://r.example", additionalHTTPHeaderFields: ["A": "b"], rawPublicKeys: [Self.key])],
            matchDomains: ["m.example"], excludedFQDNs: ["x.m.example"], allowsDNSFailover: true, appRules: [Self.app("org.example.Browser")],
            privacyPassIssuerURL: "https://issuer.example", privacyPassTokenReference: "secret-1")
        #expect(settings.isPerApp && !RelayProtocol(relays: []).isPerApp)
        let stored = configuration(settings)
        #expect(try JSONDecoder().decode(Configuration.self, from: JSONEncoder().encode(stored)) == stored)
        let minimal = try JSONDecoder().decode(RelayProtocol.self, from: Data(#"{"relays":[{"http2RelayURL":"https://r.example"}]}"#.utf8))
        #expect(minimal == RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")]))
    }

    @Test("the com.apple.relay.managed payload: a chain of two, headers, a raw public key, domains and FQDNs")
    func payload() throws {
        let profile = try ProfileParser.parse(try Fixtures.profile("relay.mobileconfig"), owner: owner)
        #expect(profile.skippedPayloads.isEmpty)
        let item = try #require(profile.configurations.first)
        #expect(item.payloadType == "com.apple.relay.managed")
        #expect(item.configuration.id.uuidString == "7A3C2E1F-9B8D-4C6A-8E5F-1D2C3B4A5968")
        #expect(item.configuration.localizedDescription == "Office relay" && item.configuration.isEnabled)
        #expect(item.configuration.profileIdentifier == "com.example.relay")
        guard case .relay(let settings) = item.configuration.protocolConfiguration else { Issue.record("not a relay configuration"); return }
        #expect(settings.relays.count == 2)
        #expect(settings.relays[0].http3RelayURL == "https://edge.example.net")
        #expect(settings.relays[0].http2RelayURL == "https://edge.example.net:8443")
        #expect(settings.relays[0].additionalHTTPHeaderFields == ["Proxy-Authorization": "Bearer 8c1f0e"])
        #expect(settings.relays[1].rawPublicKeys == [Self.key])
        #expect(settings.matchDomains == ["office.example.com"] && settings.excludedDomains == ["public.office.example.com"])
        #expect(settings.excludedFQDNs == ["login.office.example.com"] && !settings.allowsDNSFailover)
    }

    func payloadProfile(_ body: String) -> Data {
        Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
              <key>PayloadType</key><string>Configuration</string>
              <key>PayloadIdentifier</key><string>com.example.r</string>
              <key>PayloadContent</key><array><dict>
                <key>PayloadType</key><string>com.apple.relay.managed</string>
                <key>PayloadIdentifier</key><string>com.example.r.p</string>
                \(body)
              </dict></array>
            </dict></plist>
            """.utf8)
    }

    @Test("PKCS#12 payloads named by PayloadCertificateUUID (any case) become identities of the relay and DNS settings payloads; one nobody names is skipped, saying why")
    func identities() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/profiles/identities.mobileconfig")
        let data = try Data(contentsOf: fixture)
        let profile = try ProfileParser.parse(data, owner: owner)
        let dns = try #require(profile.configurations.first { $0.payloadType == ProfileParser.dnsSettingsPayloadType })
        let relay = try #require(profile.configurations.first { $0.payloadType == ProfileParser.relayPayloadType })
        #expect(dns.identities.map(\.target) == [.dnsSettings])
        #expect(relay.identities.map(\.target) == [.relay(index: 0)])
        #expect(dns.identities.first?.password == "lab-p12")
        #expect(dns.identities.first?.pkcs12 == relay.identities.first?.pkcs12 && (dns.identities.first?.pkcs12.count ?? 0) > 500)
        guard case .dnsSettings(let settings) = dns.configuration.protocolConfiguration else { Issue.record("not DNS settings"); return }
        #expect(settings.identityReference == nil, "netextd sets it when it installs the identity")
        #expect(profile.skippedPayloads.map(\.payloadIdentifier) == ["com.example.identities.unused"])
        #expect(profile.skippedPayloads.first?.reason.contains("no relay or DNS settings payload names this certificate payload") == true)
    }

    @Test("bad relay payloads are refused naming the payload and key", arguments: [
        ("", "key 'Relays': is required"),
        ("<key>Relays</key><string>x</string>", "key 'Relays': expected an array, found string"),
        ("<key>Relays</key><array><dict><key>HTTP2RelayURL</key><integer>1</integer></dict></array>", "key 'Relays[0].HTTP2RelayURL': expected a string"),
        ("<key>Relays</key><array><dict><key>HTTP2RelayURL</key><string>https://r.example</string><key>PayloadCertificateUUID</key><string>A</string></dict></array>",
         "key 'Relays[0].PayloadCertificateUUID': 'A' names no com.apple.security.pkcs12 payload in this profile"),
        ("<key>Relays</key><array><dict><key>HTTP2RelayURL</key><string>https://r.example</string><key>IdentityReference</key><string>/x.pem</string><key>PayloadCertificateUUID</key><string>A</string></dict></array>",
         "'A' names no com.apple.security.pkcs12 payload"),
        ("<key>Relays</key><array><dict><key>HTTP2RelayURL</key><string>https://r.example</string><key>RawPublicKeys</key><array><string>k</string></array></dict></array>",
         "key 'Relays[0].RawPublicKeys[0]': expected data, found string"),
        ("<key>Relays</key><array><dict><key>HTTP2RelayURL</key><string>https://r.example</string><key>AdditionalHTTPHeaderFields</key><dict><key>A</key><integer>1</integer></dict></dict></array>",
         "key 'Relays[0].AdditionalHTTPHeaderFields.A': expected a string"),
        ("<key>Relays</key><array><dict><key>HTTP3RelayURL</key><string>https://r.example</string></dict></array>", "NetExt reaches relays over HTTP/2 only"),
        ("<key>Relays</key><array><dict><key>HTTP2RelayURL</key><string>https://r.example</string></dict></array><key>MatchDomains</key><array><integer>3</integer></array>",
         "key 'MatchDomains[0]': expected a string"),
    ])
    func badPayloads(body: String, expected: String) {
        do {
            _ = try ProfileParser.parse(payloadProfile(body), owner: owner)
            Issue.record("accepted: \(body)")
        } catch {
            #expect(error.message.contains("payload 'com.example.r.p' (com.apple.relay.managed)"), "\(error.message)")
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }
}
