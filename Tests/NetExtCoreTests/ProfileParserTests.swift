import Foundation
import NetExtTestSupport
import Testing
@testable import NetExtCore

@Suite("Configuration profiles")
struct ProfileParserTests {
    let owner = Owner(uid: 0, appIdentifier: "com.netext.cli")

    @Test("a real-world-shaped profile yields every VPN payload with all its keys")
    func parsesEnterpriseProfile() throws {
        let profile = try ProfileParser.parse(try Fixtures.profile("enterprise-vpn.mobileconfig"), owner: owner)
        #expect(profile.identifier == "com.example.corp.remote-access")
        #expect(profile.displayName == "Example Corp Remote Access")
        #expect(profile.organization == "Example Corp")
        #expect(profile.configurations.count == 3)
        #expect(profile.skippedPayloads == [SkippedPayload(payloadType: "com.apple.wifi.managed", payloadIdentifier: "com.example.corp.wifi", reason: "payload type not supported by NetExt")])

        let tunnel = try #require(profile.configurations.first { $0.payloadIdentifier == "com.example.corp.vpn.tunnel" })
        #expect(tunnel.configuration.id == UUID(uuidString: "6F9C2C4E-1D2B-4E44-9A55-3B8E5B2F1A01"))
        #expect(tunnel.configuration.localizedDescription == "Example Corp Tunnel")
        #expect(tunnel.configuration.isOnDemandEnabled)
        #expect(tunnel.configuration.profileIdentifier == "com.example.corp.remote-access")
        #expect(tunnel.password == "correct horse battery staple")
        guard case .tunnelProvider(let settings) = tunnel.configuration.protocolConfiguration else {
            Issue.record("expected a tunnel provider configuration")
            return
        }
        #expect(settings.providerBundleIdentifier == "com.netext.test-provider")
        #expect(settings.providerType == .packetTunnel)
        #expect(settings.serverAddress == "vpn.corp.example.test")
        #expect(settings.username == "alice")
        #expect(settings.passwordReference == nil, "the parser never invents secret references")
        #expect(settings.excludeLocalNetworks && !settings.includeAllNetworks)
        #expect(settings.providerConfiguration["mtu"] == .number(1380))
        #expect(settings.providerConfiguration["keepalive"] == .bool(true))
        #expect(settings.providerConfiguration["routes"] == .array([.string("10.20.0.0/16")]))
        #expect(settings.providerConfiguration["serverPublicKey"] == .string("q83vEjRWeJCrze8SNFZ4kA=="))

        let rules = tunnel.configuration.onDemandRules
        #expect(rules.count == 5)
        #expect(rules[0] == OnDemandRule(action: .disconnect, interfaceTypeMatch: .wiFi, ssidMatch: ["CorpWiFi"]))
        #expect(rules[1].action == .ignore)
        #expect(rules[1].dnsSearchDomainMatch == ["corp.example.test", "*.lab.example.test"])
        #expect(rules[1].dnsServerAddressMatch == ["10.0.0.53", "fd00::53"])
        #expect(rules[2].action == .evaluateConnection)
        #expect(rules[2].connectionRules == [
            EvaluateConnectionRule(action: .connectIfNeeded, matchDomains: ["intranet.example.test"], useDNSServers: ["10.0.0.53"], probeURL: URL(string: "https://intranet.example.test/health")),
            EvaluateConnectionRule(action: .neverConnect, matchDomains: ["www.example.test"]),
        ])
        #expect(rules[3] == OnDemandRule(action: .connect, interfaceTypeMatch: .ethernet, probeURL: URL(string: "http://probe.example.test/")))
        #expect(rules[4] == .connect())

        let perApp = try #require(profile.configurations.first { $0.payloadType == "com.apple.vpn.managed.applayer" })
        guard case .tunnelProvider(let perAppSettings) = perApp.configuration.protocolConfiguration else {
            Issue.record("expected a tunnel provider configuration")
            return
        }
        #expect(perAppSettings.providerType == .appProxy)
        #expect(perAppSettings.perAppUUID == "B6C2E1A0-7A4D-4B8E-8E43-0C3C1C9D7E11")

        let ikev2 = try #require(profile.configurations.first { $0.payloadIdentifier == "com.example.corp.vpn.ikev2" })
        #expect(ikev2.sharedSecret == "s3cr3t-psk")
        #expect(ikev2.password == "ikev2-password")
        guard case .personalVPN(let ike) = ikev2.configuration.protocolConfiguration else {
            Issue.record("expected IKEv2 settings")
            return
        }
        #expect(ike == IKEv2Protocol(serverAddress: "ikev2.corp.example.test", remoteIdentifier: "ikev2.corp.example.test", localIdentifier: "alice@corp.example.test", authenticationMethod: .sharedSecret, useExtendedAuthentication: true, username: "alice"))
        #expect(!ikev2.configuration.isOnDemandEnabled)
    }

    @Test("the binary property list of the same profile parses to the same configurations")
    func binaryEqualsXML() throws {
        let xml = try ProfileParser.parse(try Fixtures.profile("enterprise-vpn.mobileconfig"), owner: owner)
        let binary = try ProfileParser.parse(try Fixtures.profile("enterprise-vpn-binary.mobileconfig"), owner: owner)
        #expect(xml.configurations.map(\.configuration) == binary.configurations.map(\.configuration))
        #expect(xml.skippedPayloads == binary.skippedPayloads)
    }

    @Test("bad profiles are refused with the payload and key at fault", arguments: [
        ("malformed.mobileconfig", "not a property list"),
        ("signed.mobileconfig", "signed"),
        ("wrong-type.mobileconfig", "payload 'com.example.corp.vpn.tunnel' (com.apple.vpn.managed): key 'VPN.RemoteAddress': expected a string, found integer"),
        ("unknown-vpntype.mobileconfig", "payload 'com.example.corp.vpn.ikev2' (com.apple.vpn.managed): key 'VPNType': unknown VPNType 'L2TP'"),
    ])
    func refusesBadProfiles(file: String, expected: String) throws {
        let data = try Fixtures.profile(file)
        let error = #expect(throws: NetExtError.self) { try ProfileParser.parse(data, owner: owner) }
        #expect(error?.code == .configurationInvalid)
        #expect(error?.message.contains(expected) == true, "message was: \(error?.message ?? "-")")
    }

    @Test("key-level mistakes name the key path", arguments: [
        ("<key>Action</key><string>Sometimes</string>", "key 'VPN.OnDemandRules[0].Action': unknown value 'Sometimes'"),
        ("<key>Action</key><string>EvaluateConnection</string>", "key 'VPN.OnDemandRules[0].ActionParameters': is required"),
        ("<key>Action</key><string>Connect</string><key>DNSServerAddressMatch</key><array><string>not-an-ip</string></array>", "key 'VPN.OnDemandRules[0].DNSServerAddressMatch[0]': 'not-an-ip' is not an IP address"),
        ("<key>Action</key><string>Connect</string><key>InterfaceTypeMatch</key><string>Bluetooth</string>", "key 'VPN.OnDemandRules[0].InterfaceTypeMatch': unknown value 'Bluetooth'"),
        ("<key>Action</key><string>Connect</string><key>URLStringProbe</key><string>ftp://x</string>", "key 'VPN.OnDemandRules[0].URLStringProbe': 'ftp://x' is not an http(s) URL"),
    ])
    func onDemandRuleErrors(rule: String, expected: String) {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict>
            <key>PayloadType</key><string>Configuration</string><key>PayloadIdentifier</key><string>p</string>
            <key>PayloadContent</key><array><dict>
            <key>PayloadType</key><string>com.apple.vpn.managed</string><key>PayloadIdentifier</key><string>p.vpn</string>
            <key>VPNType</key><string>VPN</string><key>VPNSubType</key><string>com.example.p</string>
            <key>VPN</key><dict><key>RemoteAddress</key><string>vpn.example.test</string>
            <key>OnDemandRules</key><array><dict>\(rule)</dict></array></dict>
            </dict></array></dict></plist>
            """
        let error = #expect(throws: NetExtError.self) { try ProfileParser.parse(Data(xml.utf8), owner: owner) }
        #expect(error?.message.contains("payload 'p.vpn' (com.apple.vpn.managed): " + expected) == true, "message was: \(error?.message ?? "-")")
    }

    @Test("a profile that is not a Configuration profile, or lacks content, is refused")
    func refusesWrongTopLevel() {
        let notConfiguration = #"<?xml version="1.0"?><plist version="1.0"><dict><key>PayloadType</key><string>com.apple.vpn.managed</string><key>PayloadIdentifier</key><string>x</string></dict></plist>"#
        let error1 = #expect(throws: NetExtError.self) { try ProfileParser.parse(Data(notConfiguration.utf8), owner: owner) }
        #expect(error1?.message.contains("key 'PayloadType': expected 'Configuration'") == true)
        let noContent = #"<?xml version="1.0"?><plist version="1.0"><dict><key>PayloadType</key><string>Configuration</string><key>PayloadIdentifier</key><string>x</string></dict></plist>"#
        let error2 = #expect(throws: NetExtError.self) { try ProfileParser.parse(Data(noContent.utf8), owner: owner) }
        #expect(error2?.message.contains("key 'PayloadContent': is required") == true)
        let array = #"<?xml version="1.0"?><plist version="1.0"><array/></plist>"#
        let error3 = #expect(throws: NetExtError.self) { try ProfileParser.parse(Data(array.utf8), owner: owner) }
        #expect(error3?.message.contains("top level must be a dictionary, found array") == true)
    }
}
