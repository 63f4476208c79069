import Foundation
import Testing
@testable import NetExtCore

@Suite("DNS settings: validation and stored forms")
struct DNSSettingsValidationTests {
    func configuration(_ settings: DNSSettingsProtocol) -> Configuration {
        Configuration(owner: Owner(uid: 0, appIdentifier: "a"), localizedDescription: "DNS", protocolConfiguration: .dnsSettings(settings))
    }

    @Test("well-formed settings of each transport are valid")
    func valid() throws {
        try configuration(DNSSettingsProtocol(servers: ["192.0.2.53", "2001:db8::53"])).validate()
        try configuration(DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53"], serverName: "dns.example.test", matchDomains: ["corp.example"])).validate()
        try configuration(DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53"])).validate()
        try configuration(DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53"], identityReference: "/etc/netext/dns-client.pem")).validate()
        try configuration(DNSSettingsProtocol(transport: .overHTTPS, servers: ["192.0.2.53"], serverURL: "https://dns.example.test/dns-query")).validate()
        try configuration(DNSSettingsProtocol(transport: .overHTTPS, servers: ["192.0.2.53"], serverURL: "https://dns.example.test:8443/q")).validate()
        try configuration(DNSSettingsProtocol(
            transport: .overHTTPS, servers: ["192.0.2.53", "192.0.2.54"], serverURL: "https://dns.example.test/q", httpMethod: .get, serverSelection: .parallel)).validate()
        try configuration(DNSSettingsProtocol(
            transport: .oblivious, servers: ["192.0.2.54"], serverURL: "https://target.example.test/dns-query", proxyURL: "https://proxy.example.test:8443/dns-query")).validate()
        try configuration(DNSSettingsProtocol(
            transport: .oblivious, servers: ["192.0.2.54"], serverURL: "https://target.example.test/dns-query", proxyURL: "https://proxy.example.test/dns-query",
            obliviousConfigs: Data([0, 2, 9, 9]).base64EncodedString())).validate()
    }

    @Test("each fault is refused naming the field", arguments: [
        (DNSSettingsProtocol(servers: []), "servers must name at least one DNS server"),
        (DNSSettingsProtocol(servers: ["192.0.2.53"], identityReference: "/etc/netext/id.pem"), "identityReference is for DNS over TLS or HTTPS"),
        (DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53"], identityReference: "id.pem"), "identityReference: 'id.pem' is not an absolute path"),
        (DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53"], identityReference: "/etc/../root/id.pem"), "identityReference: '/etc/../root/id.pem' is not an absolute path"),
        (DNSSettingsProtocol(transport: .overHTTPS, servers: [], serverURL: "https://dns.example.test/dns-query"), "servers must name the DNS-over-HTTPS server's addresses"),
        (DNSSettingsProtocol(servers: ["dns.example.test"]), "servers: 'dns.example.test' is not an IP address"),
        (DNSSettingsProtocol(servers: Array(repeating: "192.0.2.1", count: 9)), "servers: at most 8 servers"),
        (DNSSettingsProtocol(servers: ["192.0.2.53"], serverName: "dns.example.test"), "serverName is for DNS over TLS"),
        (DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53"], serverName: "bad name"), "serverName: 'bad name' is not a host name"),
        (DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53"], serverName: "192.0.2.53"), "serverName: '192.0.2.53' is not a host name"),
        (DNSSettingsProtocol(transport: .overHTTPS, servers: ["192.0.2.53"]), "serverURL must be given for DNS over HTTPS"),
        (DNSSettingsProtocol(transport: .overHTTPS, servers: ["192.0.2.53"], serverURL: "http://dns.example.test/dns-query"), "serverURL: 'http://dns.example.test/dns-query' is not an https URL"),
        (DNSSettingsProtocol(transport: .overHTTPS, servers: ["192.0.2.53"], serverURL: "https://192.0.2.53/dns-query"), "serverURL: 'https://192.0.2.53/dns-query' is not an https URL with a host name"),
        (DNSSettingsProtocol(transport: .overHTTPS, servers: ["192.0.2.53"], serverURL: "https://u:p@dns.example.test/"), "serverURL: 'https://u:p@dns.example.test/' is not an https URL"),
        (DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53"], matchDomains: ["corp example"]), "matchDomains: 'corp example' is not a domain name"),
        (DNSSettingsProtocol(transport: .oblivious, servers: [], serverURL: "https://t.example.test/q", proxyURL: "https://p.example.test/q"), "servers must name the Oblivious DoH proxy's addresses"),
        (DNSSettingsProtocol(transport: .oblivious, servers: ["192.0.2.54"], proxyURL: "https://p.example.test/q"), "serverURL must name the Oblivious DoH target's URL"),
        (DNSSettingsProtocol(transport: .oblivious, servers: ["192.0.2.54"], serverURL: "https://t.example.test/q"), "proxyURL must name the Oblivious DoH proxy's URL"),
        (DNSSettingsProtocol(transport: .oblivious, servers: ["192.0.2.54"], serverURL: "https://t.example.test/q", proxyURL: "https://p.example.test/q", httpMethod: .get), "httpMethod GET is for DNS over HTTPS"),
        (DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53"], httpMethod: .get), "httpMethod GET is for DNS over HTTPS"),
        (DNSSettingsProtocol(transport: .oblivious, servers: ["192.0.2.54"], serverURL: "https://t.example.test/q", proxyURL: "https://p.example.test/q?x=1"), "proxyURL: 'https://p.example.test/q?x=1' is not an https URL"),
        (DNSSettingsProtocol(transport: .oblivious, servers: ["192.0.2.54"], serverURL: "https://t.example.test/q", proxyURL: "https://p.example.test/q", obliviousConfigs: "AAUB"), "obliviousConfigs: not the base64 of an ObliviousDoHConfigs list"),
        (DNSSettingsProtocol(transport: .overHTTPS, servers: ["192.0.2.53"], serverURL: "https://t.example.test/q", proxyURL: "https://p.example.test/q"), "proxyURL is for Oblivious DoH"),
    ])
    func faults(settings: DNSSettingsProtocol, expected: String) {
        let error = #expect(throws: NetExtError.self) { try configuration(settings).validate() }
        #expect(error?.code == .configurationInvalid)
        #expect(error?.message.hasPrefix(expected) == true, "message was: \(error?.message ?? "-")")
    }

    @Test("settings stored before serverURL existed (a DoH URL in serverName) read as serverURL")
    func storedBeforeServerURL() throws {
        let stored = #"{"transport": "https", "servers": ["192.0.2.53"], "serverName": "https://dns.example.test/dns-query", "matchDomains": []}"#
        let settings = try JSONDecoder().decode(DNSSettingsProtocol.self, from: Data(stored.utf8))
        #expect(settings.serverURL == "https://dns.example.test/dns-query")
        #expect(settings.serverName == nil)
        #expect(!settings.allowsCleartextFallback && !settings.prohibitsOtherDNS)
        let again = try JSONDecoder().decode(DNSSettingsProtocol.self, from: try JSONEncoder().encode(settings))
        #expect(again == settings)
    }

    @Test("GET and parallel selection survive storing; settings stored before them read as POST, in order")
    func methodAndSelectionStored() throws {
        let settings = DNSSettingsProtocol(
            transport: .overHTTPS, servers: ["192.0.2.53", "192.0.2.54"], serverURL: "https://dns.example.test/q", httpMethod: .get, serverSelection: .parallel)
        let decoded = try JSONDecoder().decode(DNSSettingsProtocol.self, from: JSONEncoder().encode(settings))
        #expect(decoded == settings)
        let older = try JSONDecoder().decode(DNSSettingsProtocol.self, from: Data(#"{"transport":"https","servers":["192.0.2.53"],"serverURL":"https://dns.example.test/q"}"#.utf8))
        #expect(older.httpMethod == .post && older.serverSelection == .inOrder)
    }
}
