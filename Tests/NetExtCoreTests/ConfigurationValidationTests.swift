import Foundation
import Testing
@testable import NetExtCore

@Suite("Configuration validation")
struct ConfigurationValidationTests {
    func tunnel(_ settings: TunnelProviderProtocol, name: String = "VPN") -> Configuration {
        Configuration(owner: Owner(uid: 0, appIdentifier: "a"), localizedDescription: name, protocolConfiguration: .tunnelProvider(settings))
    }

    @Test("a well-formed tunnel configuration is valid")
    func valid() throws {
        try tunnel(TunnelProviderProtocol(providerBundleIdentifier: "com.example.tunnel", serverAddress: "vpn.example.test")).validate()
    }

    @Test("invalid fields are named", arguments: [
        (TunnelProviderProtocol(providerBundleIdentifier: "", serverAddress: "vpn"), "VPN", "providerBundleIdentifier must not be empty"),
        (TunnelProviderProtocol(providerBundleIdentifier: "com example", serverAddress: "vpn"), "VPN", "providerBundleIdentifier: 'com example' is not a bundle identifier"),
        (TunnelProviderProtocol(providerBundleIdentifier: "com.example", serverAddress: ""), "VPN", "serverAddress must not be empty"),
        (TunnelProviderProtocol(providerBundleIdentifier: "com.example", serverAddress: "a b"), "VPN", "serverAddress: 'a b' is not a host name or address"),
        (TunnelProviderProtocol(providerBundleIdentifier: "com.example", serverAddress: "vpn"), "  ", "localizedDescription must not be empty"),
    ])
    func invalidFields(settings: TunnelProviderProtocol, name: String, expected: String) {
        let error = #expect(throws: NetExtError.self) { try tunnel(settings, name: name).validate() }
        #expect(error?.code == .configurationInvalid)
        #expect(error?.message.hasPrefix(expected) == true, "message was: \(error?.message ?? "-")")
    }

    @Test("on-demand rules are checked")
    func onDemandRules() {
        var configuration = tunnel(TunnelProviderProtocol(providerBundleIdentifier: "com.example", serverAddress: "vpn"))
        configuration.onDemandRules = [.connect(), OnDemandRule(action: .evaluateConnection)]
        let error = #expect(throws: NetExtError.self) { try configuration.validate() }
        #expect(error?.message == "onDemandRules[1]: an evaluateConnection rule needs at least one connection rule")
        configuration.onDemandRules = [OnDemandRule(action: .connect, connectionRules: [EvaluateConnectionRule(action: .neverConnect, matchDomains: ["x"])])]
        #expect(throws: NetExtError.self) { try configuration.validate() }
    }

    @Test("URL filter intervals below the minimum are refused")
    func urlFilterInterval() {
        let settings = URLFilterProtocol(pirServerURL: "https://pir.example.test", pirPrivacyPassIssuerURL: "https://issuer.example.test", controlProviderBundleIdentifier: "com.example.control", prefilterFetchInterval: 60)
        let configuration = Configuration(owner: Owner(uid: 0, appIdentifier: "a"), localizedDescription: "Filter", protocolConfiguration: .urlFilter(settings))
        let error = #expect(throws: NetExtError.self) { try configuration.validate() }
        #expect(error?.message == "prefilterFetchInterval: 60 s is below the minimum of 2700 s")
    }

    @Test("error codes travel by name and keep Apple's numbers")
    func errorCodes() throws {
        #expect(NetExtError.Code.permissionDenied.rawValue == 10)
        #expect(NetExtError.Code.configurationStale.rawValue == 4)
        for code in NetExtError.Code.allCases {
            let error = NetExtError(code, "m")
            let decoded = try JSONDecoder().decode(NetExtError.self, from: JSONEncoder().encode(error))
            #expect(decoded == error)
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(NetExtError.self, from: Data(#"{"code":"nope","message":"m"}"#.utf8)) }
    }
}

@Suite("Provider manifests")
struct ProviderManifestTests {
    @Test("a manifest parses with defaults")
    func parses() throws {
        let manifest = try ProviderManifest.parse(Data(#"{"bundleIdentifier":"com.example.t","extensionPoint":"packet-tunnel","executable":"/usr/bin/t"}"#.utf8), file: "t.json")
        #expect(manifest == ProviderManifest(bundleIdentifier: "com.example.t", extensionPoint: .packetTunnel, executable: "/usr/bin/t", user: "nobody"))
    }

    @Test("NETestAppMapping: a manifest maps VPNUUIDs to apps for development")
    func testAppMapping() throws {
        let manifest = try ProviderManifest.parse(Data(#"{"bundleIdentifier":"com.example.t","extensionPoint":"packet-tunnel","executable":"/usr/bin/t","testAppMapping":{"CORP":["org.example.Box"]}}"#.utf8), file: "t.json")
        let expected = ["CORP": [try AppIdentifier("org.example.Box")]]
        #expect(manifest.testAppMapping == expected)
    }

    @Test("bad manifests name the file and the key", arguments: [
        (#"{"extensionPoint":"packet-tunnel","executable":"/x"}"#, "provider manifest m.json: key 'bundleIdentifier' is required"),
        (#"{"bundleIdentifier":"b","extensionPoint":"vpn","executable":"/x"}"#, "provider manifest m.json: key 'extensionPoint': unknown extension point 'vpn'"),
        (#"{"bundleIdentifier":"b","extensionPoint":"packet-tunnel","executable":"relative/x"}"#, "provider manifest m.json: key 'executable': 'relative/x' must be an absolute path"),
        (#"{"bundleIdentifier":"b","extensionPoint":"packet-tunnel","executable":5}"#, "provider manifest m.json: key 'executable'"),
        ("not json", "provider manifest m.json"),
        (#"{"bundleIdentifier":"b","extensionPoint":"packet-tunnel","executable":"/x","usr":"nobody"}"#, "provider manifest m.json: unknown key 'usr'"),
        (#"{"bundleIdentifier":"b","extensionPoint":"packet-tunnel","executable":"/x","testAppMapping":{"U":["firefox"]}}"#, "provider manifest m.json: key 'testAppMapping.U[0]'"),
    ])
    func refuses(json: String, expected: String) {
        let error = #expect(throws: NetExtError.self) { try ProviderManifest.parse(Data(json.utf8), file: "m.json") }
        #expect(error?.message.hasPrefix(expected) == true, "message was: \(error?.message ?? "-")")
    }
}

@Suite("Unknown keys in JSON files")
struct UnknownJSONKeysTests {
    struct Peer: Codable { var publicKey: String; var name: String? }
    struct File: Codable { var listen: String; var mtu: Int?; var peers: [Peer] }

    @Test("misspelt keys are found at every depth, with their paths; known and null keys are not")
    func findsMisspeltKeys() throws {
        let json = #"{"listen":"0:1","mtu2":1400,"mtu":null,"peers":[{"publicKey":"k"},{"publicKey":"k","pubkey":"x","name":null}]}"#
        let decoded = try JSONDecoder().decode(File.self, from: Data(json.utf8))
        #expect(UnknownJSONKeys.paths(in: Data(json.utf8), decoded: decoded) == ["mtu2", "peers[1].pubkey"])
        let error = #expect(throws: NetExtError.self) { try UnknownJSONKeys.refuse(in: Data(json.utf8), decoded: decoded, file: "server.json") }
        #expect(error?.message == "server.json: unknown key 'mtu2' (and 1 more: peers[1].pubkey); check its spelling against the documentation")
        let clean = #"{"listen":"0:1","mtu":1280,"peers":[{"publicKey":"k","name":"laptop"}]}"#
        #expect(UnknownJSONKeys.paths(in: Data(clean.utf8), decoded: try JSONDecoder().decode(File.self, from: Data(clean.utf8))).isEmpty)
    }

    /// Property: any key added to a valid file at a random place is named, whatever its value.
    @Test func anyAddedKeyIsNamed() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let name = "k" + String(UInt32.random(in: 0...UInt32.max, using: &generator), radix: 36)
            let value = ["1", "\"x\"", "true", "[1]", "{}"].randomElement(using: &generator)!
            let atTop = Bool.random(using: &generator)
            let json = atTop
                ? #"{"listen":"a","\#(name)":\#(value),"peers":[{"publicKey":"k"}]}"#
                : #"{"listen":"a","peers":[{"publicKey":"k","\#(name)":\#(value)}]}"#
            let decoded = try JSONDecoder().decode(File.self, from: Data(json.utf8))
            #expect(UnknownJSONKeys.paths(in: Data(json.utf8), decoded: decoded) == [atTop ? name : "peers[0].\(name)"], "\(json)")
        }
    }
}
