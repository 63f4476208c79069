import Foundation
import Testing

@testable import NetExtHTTP

@Suite("App Transport Security policy")
struct ATSPolicyTests {
    @Test("reads every key from JSON")
    func json() throws {
        let text = """
            {"NSAllowsArbitraryLoads": true,
             "NSExceptionDomains": {"Example.COM": {"NSIncludesSubdomains": true, "NSExceptionMinimumTLSVersion": "TLSv1.1",
               "NSExceptionRequiresForwardSecrecy": false, "NSExceptionAllowsInsecureHTTPLoads": true, "NSRequiresCertificateTransparency": true}},
             "NSPinnedDomains": {"pinned.example": {"NSPinnedLeafIdentities": [{"SPKI-SHA256-BASE64": "r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E="}]}}}
            """
        let policy = try ATSPolicy(dictionary: try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]))
        #expect(policy.allowsArbitraryLoads && policy.arbitraryLoadsInForce)
        let exception = try #require(policy.exceptionDomains["example.com"])
        #expect(exception.includesSubdomains && exception.allowsInsecureHTTPLoads && !exception.requiresForwardSecrecy && exception.requiresCertificateTransparency)
        #expect(exception.minimumTLSVersion == .tls11)
        #expect(policy.pinnedDomains["pinned.example"]?.leafIdentities == ["r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E="])
    }

    @Test("reads an Info.plist holding NSAppTransportSecurity")
    func infoPlist() throws {
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
              <key>CFBundleIdentifier</key><string>com.example.app</string>
              <key>NSAppTransportSecurity</key>
              <dict>
                <key>NSAllowsLocalNetworking</key><true/>
                <key>NSExceptionDomains</key>
                <dict><key>legacy.example</key><dict><key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string></dict></dict>
              </dict>
            </dict></plist>
            """
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ats-\(UUID()).plist").path
        try plist.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let policy = try ATSPolicy(contentsOf: path)
        #expect(policy.allowsLocalNetworking)
        #expect(policy.exceptionDomains["legacy.example"]?.minimumTLSVersion == .tls10)
    }

    @Test("refuses a misspelt key, a wrong type or value, with the path to it", arguments: [
        (#"{"NSAllowArbitraryLoads": true}"#, "NSAppTransportSecurity › NSAllowArbitraryLoads is not an App Transport Security key."),
        (#"{"NSAllowsArbitraryLoads": 1}"#, "NSAppTransportSecurity › NSAllowsArbitraryLoads must be a boolean (true/false, <true/>/<false/>)."),
        (#"{"NSExceptionDomains": {"a.example": {"NSIncludesSubdomain": true}}}"#, "NSAppTransportSecurity › NSExceptionDomains › a.example › NSIncludesSubdomain is not an NSExceptionDomains key."),
        (#"{"NSExceptionDomains": {"a.example": {"NSExceptionMinimumTLSVersion": "1.2"}}}"#, "NSAppTransportSecurity › NSExceptionDomains › a.example › NSExceptionMinimumTLSVersion must be one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3."),
        (#"{"NSExceptionDomains": ["a.example"]}"#, "NSAppTransportSecurity › NSExceptionDomains must be a dictionary."),
        (#"{"NSPinnedDomains": {"a.example": {"NSIncludesSubdomains": true}}}"#, "NSAppTransportSecurity › NSPinnedDomains › a.example pins nothing: give NSPinnedLeafIdentities or NSPinnedCAIdentities."),
        (#"{"NSPinnedDomains": {"a.example": {"NSPinnedLeafIdentities": [{"SPKI-SHA256-BASE64": "c2hvcnQ="}]}}}"#, "NSAppTransportSecurity › NSPinnedDomains › a.example › NSPinnedLeafIdentities › [0] › SPKI-SHA256-BASE64 must be the base64 of a 32-byte SHA-256 hash."),
    ])
    func refusals(text: String, message: String) throws {
        let dictionary = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(throws: ATSPolicyError.self) { try ATSPolicy(dictionary: dictionary) }
        do { _ = try ATSPolicy(dictionary: dictionary) } catch { #expect(error.description == message) }
    }

    @Test("a file that is neither JSON nor a property list is refused, naming the file")
    func unreadableFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ats-\(UUID()).json").path
        try "NSAllowsArbitraryLoads = YES".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try ATSPolicy(contentsOf: path)
            Issue.record("accepted")
        } catch {
            #expect(error.description.contains("in \(path) is neither a property list nor JSON"))
        }
        #expect(throws: ATSPolicyError.self) { try ATSPolicy(contentsOf: "/nonexistent/ats.json") }
    }

    @Test("random dictionaries either read or are refused with a path; nothing traps")
    func randomDictionaries() {
        var generator = SeededGenerator(seed: 24)
        let keys = ["NSAllowsArbitraryLoads", "NSAllowsLocalNetworking", "NSExceptionDomains", "NSPinnedDomains", "NSIncludesSubdomains",
                    "NSExceptionMinimumTLSVersion", "NSPinnedLeafIdentities", "SPKI-SHA256-BASE64", "x", "NSAllowsArbitraryLoadsInWebContent"]
        func value(_ depth: Int) -> Any {
            switch Int.random(in: 0..<(depth > 2 ? 4 : 6), using: &generator) {
            case 0: return Bool.random(using: &generator)
            case 1: return ["TLSv1.0", "TLSv1.3", "nope", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="].randomElement(using: &generator)!
            case 2: return Int.random(in: 0..<3, using: &generator)
            case 3: return [String]()
            case 4: return [value(depth + 1), value(depth + 1)]
            default:
                var dictionary: [String: Any] = [:]
                for _ in 0..<Int.random(in: 0..<3, using: &generator) { dictionary[keys.randomElement(using: &generator)!] = value(depth + 1) }
                return dictionary
            }
        }
        var read = 0
        for _ in 0..<2000 {
            var dictionary: [String: Any] = [:]
            for _ in 0..<Int.random(in: 0..<3, using: &generator) { dictionary[keys.randomElement(using: &generator)!] = value(0) }
            do {
                _ = try ATSPolicy(dictionary: dictionary)
                read += 1
            } catch {
                #expect(!error.path.isEmpty)
            }
        }
        #expect(read > 0)
    }
}

/// SplitMix64: the same cases on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
