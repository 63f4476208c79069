import Foundation
import Testing
@testable import NetExtCore

@Suite("DNS proxy profile payloads (com.apple.dnsProxy.managed) and configurations")
struct DNSProxyPayloadTests {
    let owner = Owner(uid: 0, appIdentifier: "com.netext.cli")

    func profile(_ keys: String) -> Data {
        Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
              <key>PayloadType</key><string>Configuration</string>
              <key>PayloadIdentifier</key><string>com.example.dnsproxy</string>
              <key>PayloadDisplayName</key><string>Company DNS proxy</string>
              <key>PayloadContent</key><array><dict>
                <key>PayloadType</key><string>com.apple.dnsProxy.managed</string>
                <key>PayloadIdentifier</key><string>com.example.dnsproxy.payload</string>
                <key>PayloadUUID</key><string>6E2C7B3F-8D4A-4F9B-8C1E-2B3C4D5E6F70</string>
                \(keys)
              </dict></array>
            </dict></plist>
            """.utf8)
    }

    @Test("the app, the provider and its configuration become a DNS proxy configuration")
    func parsed() throws {
        let parsed = try ProfileParser.parse(profile("""
            <key>AppBundleIdentifier</key><string>com.example.dnsapp</string>
            <key>ProviderBundleIdentifier</key><string>com.example.dnsapp.proxy</string>
            <key>ProviderConfiguration</key><dict><key>doh-url</key><string>https://dns.example.test/dns-query</string><key>retries</key><integer>2</integer></dict>
            """), owner: owner)
        let entry = try #require(parsed.configurations.first)
        #expect(entry.payloadType == "com.apple.dnsProxy.managed")
        #expect(entry.configuration.id == UUID(uuidString: "6E2C7B3F-8D4A-4F9B-8C1E-2B3C4D5E6F70"))
        #expect(entry.configuration.localizedDescription == "Company DNS proxy" && entry.configuration.profileIdentifier == "com.example.dnsproxy")
        guard case .tunnelProvider(let settings) = entry.configuration.protocolConfiguration else {
            Issue.record("not a provider configuration")
            return
        }
        #expect(settings.providerType == .dnsProxy && settings.extensionPoint == .dnsProxy && settings.extensionPoint.takesFlows)
        #expect(settings.providerBundleIdentifier == "com.example.dnsapp.proxy" && settings.serverAddress.isEmpty)
        #expect(settings.providerConfiguration == ["doh-url": .string("https://dns.example.test/dns-query"), "retries": .number(2)])
    }

    @Test("without ProviderBundleIdentifier the app's identifier names the provider")
    func appIdentifier() throws {
        let parsed = try ProfileParser.parse(profile("<key>AppBundleIdentifier</key><string>com.example.dnsapp</string>"), owner: owner)
        guard case .tunnelProvider(let settings)? = parsed.configurations.first?.configuration.protocolConfiguration else {
            Issue.record("not a provider configuration")
            return
        }
        #expect(settings.providerBundleIdentifier == "com.example.dnsapp")
    }

    @Test("faults name the payload and key", arguments: [
        ("", "AppBundleIdentifier"),
        ("<key>AppBundleIdentifier</key><integer>3</integer>", "AppBundleIdentifier"),
        ("<key>AppBundleIdentifier</key><string>com.example.dnsapp</string><key>ProviderConfiguration</key><string>x</string>", "ProviderConfiguration"),
        ("<key>AppBundleIdentifier</key><string>bad id with spaces</string>", "providerBundleIdentifier"),
    ])
    func faults(keys: String, named: String) {
        do {
            _ = try ProfileParser.parse(profile(keys), owner: owner)
            Issue.record("accepted: \(keys)")
        } catch {
            #expect(error.message.contains(named), "\(error.message)")
            #expect(error.message.contains("com.example.dnsproxy.payload"), "\(error.message)")
        }
    }

    @Test("a DNS proxy may have no server address; it takes app rules only bound to apps (per-app), never excluded ones or match domains; other providers still need a server")
    func validation() throws {
        var settings = TunnelProviderProtocol(providerBundleIdentifier: "com.example.dns", providerType: .dnsProxy, serverAddress: "")
        func validated(_ settings: TunnelProviderProtocol) throws(NetExtError) {
            try Configuration(owner: owner, localizedDescription: "DNS", protocolConfiguration: .tunnelProvider(settings)).validate()
        }
        try validated(settings)
        let app = try AppIdentifier("com.example.app")
        settings.appRules = [try AppRule(matchSigningIdentifier: app)]
        #expect { try validated(settings) } throws: { ($0 as? NetExtError)?.message.contains("only a per-app VPN (perAppUUID set") == true }
        settings.perAppUUID = UUID().uuidString
        try validated(settings)
        settings.appRules = [try AppRule(matchSigningIdentifier: app, matchDomains: ["example.test"])]
        #expect { try validated(settings) } throws: { ($0 as? NetExtError)?.message.contains("does not apply to a DNS proxy") == true }
        settings.appRules = []
        settings.excludedAppRules = [try AppRule(matchSigningIdentifier: app)]
        #expect { try validated(settings) } throws: { ($0 as? NetExtError)?.message.contains("excludedAppRules") == true }
        let tunnel = Configuration(owner: owner, localizedDescription: "VPN", protocolConfiguration: .tunnelProvider(
            TunnelProviderProtocol(providerBundleIdentifier: "com.example.vpn", serverAddress: "")))
        do {
            try tunnel.validate()
            Issue.record("a packet tunnel without a server accepted")
        } catch { #expect(error.message.contains("serverAddress")) }
    }

    @Test("the DNS proxy's steering: UDP and TCP to port 53, every destination of both families")
    func steeringRules() {
        #expect(TransparentProxyNetworkSettings.dnsProxy.includedNetworkRules.map(\.description) == ["0.0.0.0/0 port 53 any", "::/0 port 53 any"])
        #expect(TransparentProxyNetworkSettings.dnsProxy.includedNetworkRules.flatMap { $0.nftMatches() } == [
            "meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53", "meta nfproto ipv6 meta l4proto { tcp, udp } th dport 53",
        ])
    }

    @Test("the system's DNS settings from resolver-file text: servers, search and domain lines, comments ignored")
    func resolverFile() {
        let settings = ResolverFileText.settings(in: "# made by hand\nnameserver 192.0.2.53\nnameserver\t2001:db8::53\nsearch corp.example.test lab.test\ndomain example.test\noptions edns0\n")
        #expect(settings.servers == ["192.0.2.53", "2001:db8::53"])
        #expect(settings.searchDomains == ["corp.example.test", "lab.test", "example.test"])
        #expect(ResolverFileText.settings(in: "").servers.isEmpty)
    }
}
