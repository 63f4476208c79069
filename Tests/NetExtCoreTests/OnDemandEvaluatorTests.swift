import Foundation
import Testing
import NetExtCore

@Suite("On-demand rule evaluation")
struct OnDemandEvaluatorTests {
    let office = NetworkEnvironment(primaryInterface: "eth0", interfaceType: .ethernet, dnsSearchDomains: ["corp.office.test"], dnsServers: ["10.20.0.53"])
    let cafe = NetworkEnvironment(primaryInterface: "wlan0", interfaceType: .wiFi, ssid: "Cafe", dnsSearchDomains: ["lan"], dnsServers: ["192.168.1.1"])

    @Test("first match wins, in order; every condition of a rule must hold")
    func order() {
        let rules = [
            OnDemandRule(action: .disconnect, dnsSearchDomainMatch: ["*.office.test"]),
            OnDemandRule(action: .ignore, interfaceTypeMatch: .wiFi, ssidMatch: ["Home"]),
            OnDemandRule(action: .connect, interfaceTypeMatch: .wiFi),
            OnDemandRule(action: .disconnect),
        ]
        #expect(OnDemandEvaluator.decision(rules, in: office) { _ in false } == (.disconnect, 0))
        #expect(OnDemandEvaluator.decision(rules, in: cafe) { _ in false } == (.connect, 2))
        var home = cafe
        home.ssid = "Home"
        #expect(OnDemandEvaluator.decision(rules, in: home) { _ in false } == (.leave, 1))
        #expect(OnDemandEvaluator.decision([], in: cafe) { _ in true } == (.leave, nil))
    }

    @Test("SSID rules never match when the machine cannot tell the network's name")
    func unknownSSID() {
        var wired = cafe
        wired.ssid = nil
        #expect(!OnDemandEvaluator.matches(OnDemandRule(action: .connect, ssidMatch: ["Cafe"]), wired) { _ in true })
    }

    @Test("DNS server patterns, search-domain wildcards, and probes only when the rest matches")
    func conditions() {
        #expect(OnDemandEvaluator.matches(OnDemandRule(action: .connect, dnsServerAddressMatch: ["10.20.*"]), office) { _ in false })
        #expect(!OnDemandEvaluator.matches(OnDemandRule(action: .connect, dnsServerAddressMatch: ["10.2"]), office) { _ in false })
        #expect(OnDemandEvaluator.domainMatches("office.test", pattern: "*.office.test"))
        #expect(!OnDemandEvaluator.domainMatches("notoffice.test", pattern: "*.office.test"))
        #expect(!OnDemandEvaluator.domainMatches("a.office.test", pattern: "office.test"))
        var probed: [URL] = []
        let url = URL(string: "http://probe.test/")!
        let rule = OnDemandRule(action: .disconnect, interfaceTypeMatch: .wiFi, probeURL: url)
        #expect(!OnDemandEvaluator.matches(rule, office) { probed.append($0); return true })
        #expect(probed.isEmpty, "no probe for a rule whose interface type already failed")
        #expect(OnDemandEvaluator.matches(rule, cafe) { probed.append($0); return true })
        #expect(probed == [url])
    }
}

@Suite("On-demand rule validation")
struct OnDemandRuleValidationTests {
    @Test("DNS server patterns: addresses and one trailing wildcard are accepted, anything else is refused by key")
    func serverPatterns() throws {
        for good in ["10.0.0.53", "fd00::53", "10.0.*", "fd00:*", "*"] {
            try OnDemandRule(action: .connect, dnsServerAddressMatch: [good]).validate(at: "onDemandRules[0]")
        }
        for bad in ["10.*.0.1", "dns.example.test", "10.0.0.*3", ""] {
            #expect(throws: NetExtError.self, "\(bad)") { try OnDemandRule(action: .connect, dnsServerAddressMatch: [bad]).validate(at: "onDemandRules[0]") }
        }
    }
}
