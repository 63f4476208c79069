import Foundation
import Testing
@testable import NetExtCore

@Suite("DNS settings profile payloads (com.apple.dnsSettings.managed)")
struct DNSSettingsPayloadTests {
    let owner = Owner(uid: 0, appIdentifier: "com.netext.cli")

    func profile(_ dnsSettings: String, extra: String = "") -> Data {
        Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
              <key>PayloadType</key><string>Configuration</string>
              <key>PayloadIdentifier</key><string>com.example.dns</string>
              <key>PayloadDisplayName</key><string>Company DNS</string>
              <key>PayloadContent</key><array><dict>
                <key>PayloadType</key><string>com.apple.dnsSettings.managed</string>
                <key>PayloadIdentifier</key><string>com.example.dns.payload</string>
                <key>PayloadUUID</key><string>5D1B6A2E-7C3F-4E8A-9B0D-1A2B3C4D5E6F</string>
                <key>DNSSettings</key><dict>\(dnsSettings)</dict>
                \(extra)
              </dict></array>
            </dict></plist>
            """.utf8)
    }

    @Test("DNS over HTTPS with supplemental match domains and ProhibitDisablement")
    func https() throws {
        let parsed = try ProfileParser.parse(profile("""
            <key>DNSProtocol</key><string>HTTPS</string>
            <key>ServerURL</key><string>https://dns.example.test/dns-query</string>
            <key>ServerAddresses</key><array><string>192.0.2.53</string><string>2001:db8::53</string></array>
            <key>SupplementalMatchDomains</key><array><string>corp.example.test</string></array>
            """, extra: "<key>ProhibitDisablement</key><true/>"), owner: owner)
        let configuration = try #require(parsed.configurations.first?.configuration)
        #expect(configuration.id == UUID(uuidString: "5D1B6A2E-7C3F-4E8A-9B0D-1A2B3C4D5E6F"))
        #expect(configuration.localizedDescription == "Company DNS")
        #expect(configuration.isEnabled)
        #expect(configuration.profileIdentifier == "com.example.dns")
        #expect(configuration.protocolConfiguration == .dnsSettings(DNSSettingsProtocol(
            transport: .overHTTPS, servers: ["192.0.2.53", "2001:db8::53"], serverURL: "https://dns.example.test/dns-query",
            matchDomains: ["corp.example.test"], prohibitsOtherDNS: true)))
    }

    @Test("DNS over TLS with a server name")
    func tls() throws {
        let parsed = try ProfileParser.parse(profile("""
            <key>DNSProtocol</key><string>TLS</string>
            <key>ServerName</key><string>dns.example.test</string>
            <key>ServerAddresses</key><array><string>192.0.2.53</string></array>
            """), owner: owner)
        #expect(parsed.configurations.first?.configuration.protocolConfiguration == .dnsSettings(DNSSettingsProtocol(
            transport: .overTLS, servers: ["192.0.2.53"], serverName: "dns.example.test")))
    }

    @Test("Oblivious DoH (NetExt's DNSProtocol ObliviousHTTPS): target, proxy and pinned configurations")
    func oblivious() throws {
        let configs = Data([0, 2, 7, 7])
        let parsed = try ProfileParser.parse(profile("""
            <key>DNSProtocol</key><string>ObliviousHTTPS</string>
            <key>ServerURL</key><string>https://target.example.test/dns-query</string>
            <key>ProxyURL</key><string>https://proxy.example.test/dns-query</string>
            <key>ObliviousDoHConfigs</key><data>\(configs.base64EncodedString())</data>
            <key>ServerAddresses</key><array><string>192.0.2.54</string></array>
            """), owner: owner)
        #expect(parsed.configurations.first?.configuration.protocolConfiguration == .dnsSettings(DNSSettingsProtocol(
            transport: .oblivious, servers: ["192.0.2.54"], serverURL: "https://target.example.test/dns-query", proxyURL: "https://proxy.example.test/dns-query",
            obliviousConfigs: configs.base64EncodedString())))
        #expect(throws: NetExtError.self) {
            try ProfileParser.parse(self.profile("""
                <key>DNSProtocol</key><string>ObliviousHTTPS</string><key>ServerURL</key><string>https://t.example.test/q</string>
                <key>ProxyURL</key><string>https://p.example.test/q</string><key>ObliviousDoHConfigs</key><string>not data</string>
                <key>ServerAddresses</key><array><string>192.0.2.54</string></array>
                """), owner: self.owner)
        }
    }

    @Test("faults name the payload and key", arguments: [
        ("<key>DNSProtocol</key><string>QUIC</string>", "", "DNSProtocol"),
        ("<key>ServerName</key><string>dns.example.test</string>", "", "DNSProtocol"),
        ("<key>DNSProtocol</key><string>HTTPS</string><key>ServerAddresses</key><array><string>192.0.2.53</string></array>", "", "serverURL must be given"),
        ("<key>DNSProtocol</key><string>TLS</string>", "", "servers must name at least one DNS server"),
        ("<key>DNSProtocol</key><string>TLS</string><key>ServerAddresses</key><array><string>192.0.2.53</string></array>",
         "<key>OnDemandRules</key><array><dict><key>Action</key><string>EvaluateConnection</string><key>ActionParameters</key><array><dict><key>Domains</key><array><string>x.test</string></array><key>DomainAction</key><string>ConnectIfNeeded</string></dict></array></dict></array>",
         "onDemandRules[0]: EvaluateConnection is for VPNs"),
        ("<key>DNSProtocol</key><string>TLS</string><key>ServerAddresses</key><array><string>192.0.2.53</string></array>",
         "<key>OnDemandRules</key><array><dict><key>Action</key><string>Sometimes</string></dict></array>", "Action"),
    ])
    func faults(dnsSettings: String, extra: String, expected: String) {
        let error = #expect(throws: NetExtError.self) { try ProfileParser.parse(profile(dnsSettings, extra: extra), owner: owner) }
        #expect(error?.message.contains(expected) == true, "message was: \(error?.message ?? "-")")
        #expect(error?.message.contains("com.example.dns.payload") == true, "the payload is named: \(error?.message ?? "-")")
    }

    @Test("OnDemandRules decide where the settings are in force: kept in order, on-demand on")
    func onDemandRules() throws {
        let parsed = try ProfileParser.parse(profile("""
            <key>DNSProtocol</key><string>TLS</string>
            <key>ServerName</key><string>dns.example.test</string>
            <key>ServerAddresses</key><array><string>192.0.2.53</string></array>
            """, extra: """
            <key>OnDemandRules</key><array>
              <dict><key>Action</key><string>Disconnect</string><key>SSIDMatch</key><array><string>Home</string></array></dict>
              <dict><key>Action</key><string>Connect</string></dict>
            </array>
            """), owner: owner)
        let configuration = try #require(parsed.configurations.first?.configuration)
        #expect(configuration.isOnDemandEnabled)
        #expect(configuration.onDemandRules.map(\.action) == [.disconnect, .connect])
        #expect(configuration.onDemandRules.first?.ssidMatch == ["Home"])
    }
}
