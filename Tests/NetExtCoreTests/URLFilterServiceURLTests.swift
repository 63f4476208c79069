import Foundation
import NetExtTestSupport
import Testing
@testable import NetExtCore

/// Apple's deployment rules for the URL filter's service URLs (pir-service-example,
/// Onboarding.md, "URLs"; paths unsupported since iOS and macOS 26.4), Apple's own good and bad
/// examples among the cases, and the development exemption.
@Suite("URL filter service URLs")
struct URLFilterServiceURLTests {
    @Test("Apple's good examples and host-only https URLs pass", arguments: [
        "https://gateway.example.net", "https://issuer.example.net", "https://service.example.net",
        "https://pir.example.net:443", "https://PIR.Example.NET", "https://xn--bcher-kva.example",
    ])
    func hostOnlyHTTPSPasses(url: String) {
        #expect(URLFilterServiceURL.deploymentProblem(url, field: "pirServerURL") == nil)
    }

    @Test("what is wrong is named", arguments: [
        // Apple's bad examples: the first problem found is the one named.
        ("http://example.net:8080/lookup", "pirServerURL: 'http://example.net:8080/lookup' must use https"),
        ("http://example.net/", "pirServerURL: 'http://example.net/' must use https"),
        ("https://example.net/", "pirServerURL: 'https://example.net/' ends with '/'; since iOS and macOS 26.4"),
        ("https://example.net/lookup", "pirServerURL: 'https://example.net/lookup' has the path '/lookup'; since iOS and macOS 26.4 a service is named by a host name of its own"),
        ("https://example.net:8443", "pirServerURL: 'https://example.net:8443' names port 8443"),
        ("https://user:secret@example.net", "must not carry a user name or password"),
        ("https://example.net?use=pir", "must not have a query or fragment"),
        ("https://example.net#pir", "must not have a query or fragment"),
        ("https://192.0.2.7", "names an address; a deployment names each service by a DNS host name"),
        ("https://[2001:db8::7]", "names an address"),
        ("pir.example.net", "is not a URL"),
        ("", "is not a URL"),
    ])
    func problemsAreNamed(url: String, expected: String) {
        let problem = URLFilterServiceURL.deploymentProblem(url, field: "pirServerURL")
        #expect(problem?.contains(expected) == true, "problem was: \(problem ?? "none")")
    }

    /// Generated URLs: a host of 1–4 random labels passes bare and fails with any path,
    /// another port or http.
    @Test func generatedHostsPassBareAndFailDressed() {
        var random = SplitMix64(state: 0x5EED_2604)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        for _ in 0..<500 {
            let labels = (0..<Int.random(in: 1...4, using: &random)).map { _ in
                String((0..<Int.random(in: 1...12, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            }
            let host = "s" + labels.joined(separator: ".") + ".example"
            #expect(URLFilterServiceURL.deploymentProblem("https://\(host)", field: "f") == nil, "\(host)")
            let segment = String((0..<Int.random(in: 0...8, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            #expect(URLFilterServiceURL.deploymentProblem("https://\(host)/\(segment)", field: "f") != nil)
            #expect(URLFilterServiceURL.deploymentProblem("https://\(host):\(Int.random(in: 1...65535, using: &random) | 1024)", field: "f") != nil)
            #expect(URLFilterServiceURL.deploymentProblem("http://\(host)", field: "f") != nil)
        }
    }

    func configuration(pir: String, issuer: String, development: Bool) -> Configuration {
        let settings = URLFilterProtocol(
            pirServerURL: pir, pirPrivacyPassIssuerURL: issuer, controlProviderBundleIdentifier: "com.example.control",
            allowsDevelopmentURLs: development)
        return Configuration(owner: Owner(uid: 0, appIdentifier: "a"), localizedDescription: "Filter", protocolConfiguration: .urlFilter(settings))
    }

    @Test func aDeploymentConfigurationIsHeldToTheRulesAndADevelopmentOneIsNot() throws {
        try configuration(pir: "https://pir.example.net", issuer: "https://issuer.example.net", development: false).validate()
        try configuration(pir: "https://example.net", issuer: "https://example.net", development: false).validate()
        let error = #expect(throws: NetExtError.self) {
            try configuration(pir: "https://pir.example.net", issuer: "https://example.net/issuer", development: false).validate()
        }
        #expect(error?.message.hasPrefix("pirPrivacyPassIssuerURL: 'https://example.net/issuer' has the path '/issuer'") == true, "\(error?.message ?? "-")")
        try configuration(pir: "http://127.0.0.1:8080/pir", issuer: "http://issuer.netext", development: true).validate()
        // Development relaxes the shape, not the need for an http(s) URL.
        #expect(throws: NetExtError.self) { try configuration(pir: "pir", issuer: "http://issuer.netext", development: true).validate() }
    }

    @Test func theExemptionIsStoredAndConfigurationsFromBeforeItStayReadable() throws {
        let stored = configuration(pir: "https://pir.example.net", issuer: "https://issuer.example.net", development: false)
        let roundTrip = try JSONDecoder().decode(Configuration.self, from: JSONEncoder().encode(stored))
        #expect(roundTrip == stored)
        // A configuration saved before the field existed was accepted with any http(s) URL:
        // it reads back as a development one, so saving it again does not fail.
        let older = #"{"pirServerURL": "http://pir.netext", "pirPrivacyPassIssuerURL": "http://issuer.netext", "controlProviderBundleIdentifier": "c", "prefilterFetchInterval": 86400, "shouldFailClosed": false}"#
        let settings = try JSONDecoder().decode(URLFilterProtocol.self, from: Data(older.utf8))
        #expect(settings.allowsDevelopmentURLs)
        #expect(settings.pirServerURL == "http://pir.netext")
    }
}
