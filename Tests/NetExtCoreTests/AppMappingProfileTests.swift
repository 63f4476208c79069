import Foundation
import NetExtTestSupport
import Testing
@testable import NetExtCore

@Suite("Per-app VPN from profiles: the applayer payload and the app mapping payload")
struct AppMappingProfileTests {
    let owner = Owner(uid: 0, appIdentifier: "com.netext.cli")

    static func profile(mapping: String, vpnUUID: String = "CORP-APPS") -> Data {
        Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
            <key>PayloadType</key><string>Configuration</string>
            <key>PayloadIdentifier</key><string>p</string>
            <key>PayloadContent</key><array>
              <dict><key>PayloadType</key><string>com.apple.vpn.managed.appmapping</string><key>PayloadIdentifier</key><string>m</string>
                <key>AppLayerVPNMapping</key><array>\(mapping)</array></dict>
              <dict><key>PayloadType</key><string>com.apple.vpn.managed.applayer</string><key>PayloadIdentifier</key><string>v</string>
                <key>UserDefinedName</key><string>Apps</string><key>VPNType</key><string>VPN</string><key>VPNSubType</key><string>com.netext.tunnel</string><key>VPNUUID</key><string>\(vpnUUID)</string>
                <key>VPN</key><dict><key>RemoteAddress</key><string>vpn.example.test</string></dict></dict>
            </array></dict></plist>
            """.utf8)
    }

    @Test("the mapped apps become the per-app VPN's app rules, with Path as matchPath; the designated requirement is not needed")
    func mappedApps() throws {
        let profile = try ProfileParser.parse(try Fixtures.profile("per-app-vpn.mobileconfig"), owner: owner)
        #expect(profile.skippedPayloads.isEmpty)
        let vpn = try #require(profile.configurations.first)
        guard case .tunnelProvider(let settings) = vpn.configuration.protocolConfiguration else { Issue.record("not a tunnel"); return }
        #expect(settings.isPerApp && settings.perAppUUID == "CORP-APPS")
        #expect(settings.appRules == [
            try AppRule(matchSigningIdentifier: AppIdentifier("org.mozilla.firefox")),
            try AppRule(matchSigningIdentifier: AppIdentifier("com.example.corp.Mail"), matchPath: "/usr/bin/corp-mail"),
        ])
        #expect(vpn.configuration.localizedDescription == "Corp Apps")
    }

    @Test("faults are named with the payload and the key")
    func faults() {
        let cases: [(String, String, String)] = [
            ("<dict><key>Identifier</key><string>firefox</string><key>VPNUUID</key><string>CORP-APPS</string></dict>", "CORP-APPS",
             "key 'AppLayerVPNMapping[0].Identifier': 'firefox' is not an app identifier"),
            ("<dict><key>Identifier</key><string>org.a.B</string><key>SigningIdentifier</key><string>org.a.C</string><key>VPNUUID</key><string>CORP-APPS</string></dict>", "CORP-APPS",
             "key 'AppLayerVPNMapping[0].SigningIdentifier': 'org.a.C' differs from Identifier 'org.a.B'"),
            ("<dict><key>Identifier</key><string>org.a.B</string></dict>", "CORP-APPS", "key 'AppLayerVPNMapping[0].VPNUUID'"),
            ("<dict><key>Identifier</key><string>org.a.B</string><key>Path</key><string>relative/bin</string><key>VPNUUID</key><string>CORP-APPS</string></dict>", "CORP-APPS",
             "key 'AppLayerVPNMapping[0].Path': matchPath: 'relative/bin' is not an absolute path"),
            ("<dict><key>Identifier</key><string>org.a.B</string><key>VPNUUID</key><string>OTHER</string></dict>", "CORP-APPS",
             "org.a.B is mapped to VPNUUID 'OTHER', which no per-app VPN payload"),
            ("<string>not a dictionary</string>", "CORP-APPS", "key 'AppLayerVPNMapping[0]': expected a dictionary"),
        ]
        for (mapping, uuid, expected) in cases {
            do {
                _ = try ProfileParser.parse(Self.profile(mapping: mapping, vpnUUID: uuid), owner: owner)
                Issue.record("accepted: \(mapping)")
            } catch {
                #expect(error.message.contains(expected), "\(error.message)")
                #expect(error.message.contains("payload 'm' (com.apple.vpn.managed.appmapping)") || expected.contains("no per-app VPN"), "\(error.message)")
            }
        }
    }
}
