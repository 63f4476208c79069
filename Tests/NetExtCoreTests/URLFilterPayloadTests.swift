import Foundation
import Testing
@testable import NetExtCore

@Suite("URL filter profile payloads and prefilters")
struct URLFilterPayloadTests {
    let owner = Owner(uid: 0, appIdentifier: "com.netext.cli")

    func profile(_ parameters: String, filterURLs: String = "<true/>") -> Data {
        Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
              <key>PayloadType</key><string>Configuration</string>
              <key>PayloadIdentifier</key><string>com.example.school.urlfilter</string>
              <key>PayloadDisplayName</key><string>School URL filter</string>
              <key>PayloadContent</key><array><dict>
                <key>PayloadType</key><string>com.apple.webcontent-filter</string>
                <key>PayloadIdentifier</key><string>com.example.school.urlfilter.payload</string>
                <key>PayloadUUID</key><string>0B1F4C1E-2F6A-4C8B-9E0D-6A1C2B3D4E5F</string>
                <key>FilterType</key><string>Plugin</string>
                <key>FilterURLs</key>\(filterURLs)
                <key>URLFilterParameters</key><dict>\(parameters)</dict>
              </dict></array>
            </dict></plist>
            """.utf8)
    }

    static let complete = """
        <key>URLFilterControlProviderBundleIdentifier</key><string>com.example.school.urlfilter.control</string>
        <key>PIRServerURL</key><string>https://pir.school.example</string>
        <key>PIRPrivacyPassIssuerURL</key><string>https://issuer.school.example</string>
        <key>PIRAuthenticationToken</key><string>credential-0123456789abcdef</string>
        <key>URLFilterFailClosed</key><true/>
        <key>URLPrefilterFetchFrequency</key><integer>3600</integer>
        <key>NetExtRelayURL</key><string>https://relay.example/relay</string>
        """

    @Test func installsEveryKeyWithTheCredentialAsASecret() throws {
        let parsed = try ProfileParser.parse(profile(Self.complete), owner: owner)
        #expect(parsed.skippedPayloads.isEmpty)
        let item = try #require(parsed.configurations.first)
        #expect(item.password == "credential-0123456789abcdef")
        #expect(item.configuration.id == UUID(uuidString: "0B1F4C1E-2F6A-4C8B-9E0D-6A1C2B3D4E5F"))
        #expect(item.configuration.localizedDescription == "School URL filter")
        #expect(item.configuration.isEnabled)
        guard case .urlFilter(let settings) = item.configuration.protocolConfiguration else {
            Issue.record("expected a URL filter configuration")
            return
        }
        #expect(settings == URLFilterProtocol(
            pirServerURL: "https://pir.school.example", pirPrivacyPassIssuerURL: "https://issuer.school.example",
            controlProviderBundleIdentifier: "com.example.school.urlfilter.control", prefilterFetchInterval: 3600, shouldFailClosed: true,
            relayURL: "https://relay.example/relay"))
        // The credential is not part of the stored configuration.
        #expect(!String(decoding: try JSONEncoder().encode(item.configuration), as: UTF8.self).contains("credential-0123456789abcdef"))
    }

    @Test("mistakes name the key", arguments: [
        ("", "key 'URLFilterParameters.PIRServerURL': is required"),
        (complete.replacingOccurrences(of: "<integer>3600</integer>", with: "<integer>60</integer>"), "key 'URLFilterParameters.URLPrefilterFetchFrequency': 60 s is below the minimum of 2700 s"),
        (complete.replacingOccurrences(of: "<integer>3600</integer>", with: "<string>often</string>"), "key 'URLFilterParameters.URLPrefilterFetchFrequency': expected a number, found string"),
        (complete.replacingOccurrences(of: "https://pir.school.example", with: "pir"), "pirServerURL: 'pir' is not an http(s) URL"),
    ])
    func refusesMistakes(parameters: String, expected: String) {
        let error = #expect(throws: NetExtError.self) { try ProfileParser.parse(profile(parameters), owner: owner) }
        #expect(error?.message.contains(expected) == true, "message was: \(error?.message ?? "-")")
    }

    @Test func contentFilterPayloadsWithoutURLsAreSkippedNotInstalled() throws {
        let parsed = try ProfileParser.parse(profile(Self.complete, filterURLs: "<false/>"), owner: owner)
        #expect(parsed.configurations.isEmpty)
        #expect(parsed.skippedPayloads.first?.reason.contains("FilterURLs") == true)
    }

    @Test func prefilterBytesAreCheckedAgainstTheirParameters() throws {
        #expect(try URLFilterPrefilter(data: Data([0xFF, 0x01]), bitCount: 9, hashCount: 2, murmurSeed: 0).resolvedBytes() == [0xFF, 0x01])
        let cases: [(URLFilterPrefilter, String)] = [
            (URLFilterPrefilter(data: Data([0]), bitCount: 9, hashCount: 2, murmurSeed: 0), "holds 1 bytes; bitCount 9 needs 2"),
            (URLFilterPrefilter(data: Data([0]), bitCount: 0, hashCount: 2, murmurSeed: 0), "bitCount 0"),
            (URLFilterPrefilter(data: Data([0]), bitCount: 8, hashCount: 0, murmurSeed: 0), "hashCount 0"),
            (URLFilterPrefilter(path: "/nonexistent/netext-prefilter.bin", bitCount: 8, hashCount: 1, murmurSeed: 0), "cannot be read"),
        ]
        for (prefilter, expected) in cases {
            let error = #expect(throws: NetExtError.self) { try prefilter.resolvedBytes() }
            #expect(error?.message.contains(expected) == true, "message was: \(error?.message ?? "-")")
        }
        var both = URLFilterPrefilter(data: Data([0]), bitCount: 8, hashCount: 1, murmurSeed: 0)
        both.path = "/tmp/x"
        #expect(throws: NetExtError.self) { try both.resolvedBytes() }
    }
}
