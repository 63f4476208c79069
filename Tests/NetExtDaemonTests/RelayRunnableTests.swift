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

/// The client identities netextd reads for the relay provider.
@Suite("Relay client identities handed over at the start")
struct RelayStartOptionsTests {
    @Test("an identity file readable by its owner alone goes into the start options under relayIdentities; one others may read, or a missing one, fails naming it")
    func identities() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netext-relay-identity-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/identity.pem"
        try "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        let settings = RelayProtocol(relays: [RelayHop(http2RelayURL: "https://a.example"), RelayHop(http2RelayURL: "https://b.example", identityReference: path)])
        let options = try SessionManager.relayStartOptions(settings, options: ["other": .bool(true)])
        #expect(options["other"] == .bool(true))
        guard case .object(let identities)? = options["relayIdentities"], case .string(let text)? = identities["1"] else {
            Issue.record("no identity for relay 1: \(options)")
            return
        }
        #expect(text.hasPrefix("-----BEGIN CERTIFICATE-----") && identities.count == 1)
        #expect(try SessionManager.relayStartOptions(RelayProtocol(relays: [RelayHop(http2RelayURL: "https://a.example")]), options: [:]).isEmpty)

        chmod(path, 0o644)
        do {
            _ = try SessionManager.relayStartOptions(settings, options: [:])
            Issue.record("a file others may read was accepted")
        } catch { #expect(error.message.contains("relays[1].identityReference: \(path) may be read by its group or others (mode 644)")) }
        let missing = RelayProtocol(relays: [RelayHop(http2RelayURL: "https://a.example", identityReference: directory + "/none.pem")])
        do {
            _ = try SessionManager.relayStartOptions(missing, options: [:])
            Issue.record("a missing file was accepted")
        } catch { #expect(error.message.contains("relays[0].identityReference: cannot read")) }
    }

    @Test("a Privacy Pass issuer's credential comes from the secret store into the start options under relayPrivacyPassToken; an issuer without one fails the start saying how to give it")
    func privacyPassCredential() throws {
        var settings = RelayProtocol(relays: [RelayHop(http2RelayURL: "https://a.example")], privacyPassIssuerURL: "https://issuer.example")
        settings.privacyPassTokenReference = "secret-1"
        let lookup: (String) throws(NetExtError) -> String? = { $0 == "secret-1" ? "issuer-credential" : nil }
        let options = try SessionManager.relayStartOptions(settings, options: [:], secret: lookup)
        #expect(options["relayPrivacyPassToken"] == .string("issuer-credential"))
        settings.privacyPassTokenReference = "secret-gone"
        do {
            _ = try SessionManager.relayStartOptions(settings, options: [:], secret: lookup)
            Issue.record("an issuer without a credential was accepted")
        } catch { #expect(error.message.contains("the relays' Privacy Pass issuer has no credential; give one with `netext relay configure")) }
        // Without an issuer nothing is looked up.
        #expect(try SessionManager.relayStartOptions(RelayProtocol(relays: [RelayHop(http2RelayURL: "https://a.example")]), options: [:], secret: lookup).isEmpty)
    }
}
