import Foundation
import NetExtTestSupport
import Testing
@testable import NetExtCore

/// Apps on Linux (issue 20): reverse-DNS app identifiers, and unit-name patterns that recognise
/// the scopes and services desktops, Flatpak and snapd start apps in.
@Suite("App identifiers and unit name patterns")
struct AppIdentityTests {
    @Test("identifiers in reverse-DNS form are accepted", arguments: ["org.mozilla.firefox", "com.example.App_2", "io.github.some-one.Tool", "a.b"])
    func acceptsReverseDNS(text: String) throws {
        #expect(try AppIdentifier(text).rawValue == text)
    }

    @Test("what is wrong with an identifier is named", arguments: [
        ("", "it is empty"), ("firefox", "at least two dot-separated elements"), ("org..firefox", "an empty element"),
        ("org.1password.App", "the element '1password' starts with a digit"), ("org.example/App", "'/' is not allowed"),
        ("org.exämple.App", "is not allowed"), (String(repeating: "a.", count: 128) + "b", "longer than 255"),
    ])
    func namesTheFault(text: String, expected: String) {
        let error = #expect(throws: NetExtError.self) { try AppIdentifier(text) }
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "-")")
    }

    @Test func identifiersDecodeThroughTheSameCheck() throws {
        #expect(try JSONDecoder().decode([AppIdentifier].self, from: Data(#"["org.example.App"]"#.utf8)) == [try AppIdentifier("org.example.App")])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([AppIdentifier].self, from: Data(#"["not an id"]"#.utf8)) }
    }

    @Test("the conventional units of an app are recognised, others' are not", arguments: [
        ("app-gnome-org.mozilla.firefox-4711.scope", true),
        ("app-flatpak-org.mozilla.firefox-102938.scope", true),
        ("app-org.mozilla.firefox-3.scope", true),
        ("app-kde-org.mozilla.firefox@a1b2c3.service", true),
        ("app-org.mozilla.firefox@1.service", true),
        ("app-gnome-org.mozilla.firefox.service", true),
        // systemd-escape writes an ID's '-' as \x2d.
        ("app-gnome-org.mozilla.firefox-4711.scope".replacingOccurrences(of: "org.mozilla.firefox", with: "org.mozilla.fire\\x2dfox"), false),
        ("app-gnome-org.mozilla.firefox.beta-4711.scope", false),
        ("app-gnome-org.mozilla.firefoxbeta-4711.scope", false),
        ("app-gnome-com.example.Other-4711.scope", false),
        ("session-2.scope", false),
        ("org.mozilla.firefox", false),
    ])
    func recognisesAppUnits(unit: String, expected: Bool) throws {
        let patterns = UnitNamePattern.systemdAppUnits(of: try AppIdentifier("org.mozilla.firefox"))
        #expect(patterns.contains { $0.matches(unit) } == expected, "\(unit)")
    }

    @Test func escapedIdentifiersMatchTheirIDs() throws {
        let patterns = UnitNamePattern.systemdAppUnits(of: try AppIdentifier("org.example.my-app"))
        #expect(patterns.contains { $0.matches("app-gnome-org.example.my\\x2dapp-77.scope") })
        #expect(patterns.contains { $0.matches("app-flatpak-org.example.my-app-77.scope") })
    }

    @Test func snapAndExplicitPatterns() throws {
        let snap = try UnitNamePattern("snap.firefox.*")
        #expect(snap.matches("snap.firefox.firefox-0d3f6b3c-5f4e-4a5e-9c1b-2a3b4c5d6e7f.scope"))
        #expect(!snap.matches("snap.thunderbird.thunderbird-1.scope"))
        #expect(try UnitNamePattern("a?c").matches("abc"))
        #expect(!(try UnitNamePattern("a?c").matches("ac")))
        #expect(throws: NetExtError.self) { try UnitNamePattern("user.slice/app-*.scope") }
        #expect(throws: NetExtError.self) { try UnitNamePattern("") }
    }

    /// The glob against a regular-expression reference on random patterns and names over a
    /// small alphabet (where stars and repeats interact most).
    @Test func globAgreesWithARegularExpressionOnRandomCases() throws {
        var random = SplitMix64(state: 0xA99_5C0BE)
        let alphabet = Array("ab-.")
        for _ in 0..<3000 {
            let pattern = String((0..<Int.random(in: 1...7, using: &random)).map { _ in
                Int.random(in: 0..<4, using: &random) == 0 ? (Bool.random(using: &random) ? "*" : "?") : alphabet.randomElement(using: &random)!
            })
            let name = String((0..<Int.random(in: 0...9, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            let regex = try Regex("^" + pattern.map { $0 == "*" ? ".*" : $0 == "?" ? "." : $0 == "." ? "\\." : String($0) }.joined() + "$")
            let expected = name.wholeMatch(of: regex) != nil
            #expect(try UnitNamePattern(pattern).matches(name) == expected, "\(pattern) vs \(name)")
        }
    }

    /// Long names with many stars finish at once (no exponential backtracking).
    @Test func manyStarsStayLinear() throws {
        let pattern = try UnitNamePattern(String(repeating: "*a", count: 60) + "b")
        let start = ContinuousClock.now
        #expect(!pattern.matches(String(repeating: "a", count: 250)))
        #expect(ContinuousClock.now - start < .seconds(1))
    }
}

@Suite("App rules")
struct AppRuleTests {
    @Test func domainsAreNormalisedAndMatchOnLabelBoundaries() throws {
        let rule = try AppRule(matchSigningIdentifier: try AppIdentifier("com.example.Mail"), matchDomains: ["Corp.Example.", "intranet.test"])
        #expect(rule.matchDomains == ["corp.example", "intranet.test"])
        #expect(rule.covers(host: "mail.corp.example"))
        #expect(rule.covers(host: "INTRANET.test"))
        #expect(!rule.covers(host: "evilcorp.example"))
        #expect(!rule.covers(host: nil))
        let everywhere = try AppRule(matchSigningIdentifier: try AppIdentifier("com.example.Mail"))
        #expect(everywhere.covers(host: nil) && everywhere.covers(host: "anything.example"))
    }

    @Test func badPathsAndDomainsAreNamed() throws {
        let app = try AppIdentifier("com.example.Mail")
        let path = #expect(throws: NetExtError.self) { try AppRule(matchSigningIdentifier: app, matchPath: "bin/mail") }
        #expect(path?.message == "matchPath: 'bin/mail' is not an absolute path to an executable")
        let domain = #expect(throws: NetExtError.self) { try AppRule(matchSigningIdentifier: app, matchDomains: ["corp example"]) }
        #expect(domain?.message.hasPrefix("matchDomains: 'corp example' is not a domain name") == true)
    }

    @Test func decodingChecksAsTheInitializerDoes() throws {
        let good = #"{"matchSigningIdentifier": "com.example.Mail", "matchPath": "/usr/bin/mail", "matchDomains": ["corp.example"]}"#
        let rule = try JSONDecoder().decode(AppRule.self, from: Data(good.utf8))
        #expect(rule.matchPath == "/usr/bin/mail")
        #expect(try JSONDecoder().decode(AppRule.self, from: JSONEncoder().encode(rule)) == rule)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(AppRule.self, from: Data(#"{"matchSigningIdentifier": "com.example.Mail", "matchPath": "mail"}"#.utf8)) }
    }
}
