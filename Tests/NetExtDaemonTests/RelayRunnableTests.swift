import Foundation
import NetExtCore
import Testing
@testable import NetExtDaemon

/// What netextd runs a relay configuration as, and how its apps are steered.
@Suite("Relay configurations as netextd runs them")
struct RelayRunnableTests {
    static let owner = Owner(uid: 0, appIdentifier: "com.netext.cli")

    static func relay(appRules: [AppRule] = []) -> Configuration {
        Configuration(owner: owner, localizedDescription: "Office relay", isEnabled: true, protocolConfiguration: .relay(RelayProtocol(
            relays: [RelayHop(http2RelayURL: "https://relay.example:8443")], matchDomains: ["office.example"], appRules: appRules)))
    }

    @Test("relays for every program: a transparent proxy of com.netext.relay, the settings and a lab's CA file in its provider configuration; no app steering")
    func everyProgram() throws {
        let runnable = SessionManager.runnable(Self.relay(), environment: ["NETEXT_RELAY_CA_FILE": "/tmp/lab-ca.crt"])
        guard case .tunnelProvider(let settings) = runnable.protocolConfiguration else { Issue.record("\(runnable)"); return }
        #expect(settings.providerBundleIdentifier == RelayProtocol.providerBundleIdentifier && settings.providerType == .transparentProxy)
        #expect(settings.serverAddress == "relay.example:8443" && !settings.isPerApp)
        #expect(settings.providerConfiguration["caFile"] == .string("/tmp/lab-ca.crt"))
        #expect(settings.providerConfiguration["relay"] != nil)
        #expect(AppSteeringController.steeredApps(of: runnable) == nil)
    }

    @Test("per-app relays: an app proxy of com.netext.relay.per-app bound to the apps, steered in proxy mode")
    func perApp() throws {
        let browser = try AppRule(matchSigningIdentifier: try AppIdentifier("org.example.Browser"))
        let configuration = Self.relay(appRules: [browser])
        let runnable = SessionManager.runnable(configuration, environment: [:])
        guard case .tunnelProvider(let settings) = runnable.protocolConfiguration else { Issue.record("\(runnable)"); return }
        #expect(settings.providerBundleIdentifier == RelayProtocol.perAppProviderBundleIdentifier && settings.providerType == .appProxy)
        #expect(settings.perAppUUID == configuration.id.uuidString && settings.appRules == [browser])
        #expect(settings.providerConfiguration["caFile"] == nil)
        try runnable.validate()
        let steered = try #require(AppSteeringController.steeredApps(of: runnable))
        #expect(steered.0 == .proxy && steered.1 == [browser])
    }
}
