import Foundation
import NetExtCore
import NetExtTestSupport
import Testing

/// The personal firewall's rules and questions.
@Suite("Personal firewall: rules and questions")
struct FirewallRulesTests {
    static func flow(program: String?, host: String? = nil, address: String = "203.0.113.2", port: UInt16 = 443) -> FilterFlow {
        FilterFlow(
            id: 1, direction: .outbound, transport: .tcp, localAddress: "198.51.100.2", localPort: 40_000, remoteAddress: address, remotePort: port,
            remoteHostname: host, sourceApplication: program.map { SourceApplication(uid: 1000, gid: 1000, pid: 42, executable: $0) })
    }

    @Test("the first matching rule decides: program path or *, host on label boundaries, prefix, *")
    func firstMatch() throws {
        let rules = try FirewallRules(text: """
            # comment
            allow /usr/bin/curl school.test
            deny  /usr/bin/curl *     # everything else curl does
            allow * 10.0.0.0/8
            deny * 2001:db8::1
            allow * *
            """)
        #expect(rules.count == 5)
        #expect(rules.match(Self.flow(program: "/usr/bin/curl", host: "www.school.test"))?.action == .allow)
        #expect(rules.match(Self.flow(program: "/usr/bin/curl", host: "badschool.test"))?.description == "deny /usr/bin/curl *")
        #expect(rules.match(Self.flow(program: "/usr/bin/wget", address: "10.1.2.3"))?.description == "allow * 10.0.0.0/8")
        #expect(rules.match(Self.flow(program: nil, address: "2001:db8::1"))?.action == .deny, "an unknown program meets only * rules")
        #expect(rules.match(Self.flow(program: nil, host: "school.test"))?.description == "allow * *")
        let again = try FirewallRules(text: rules.text)
        #expect(again == rules, "the file text reads back to the same rules")
    }

    @Test("malformed lines are refused with their number and what is wrong", arguments: [
        ("allow /usr/bin/curl", "line 1", "three words"),
        ("permit * *", "line 1", "neither allow nor deny"),
        ("allow curl *", "line 1", "absolute path"),
        ("\n\ndeny * bad_host!", "line 3", "destination"),
    ])
    func malformed(text: String, line: String, words: String) {
        do {
            _ = try FirewallRules(text: text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.message.contains(line) && error.message.contains(words), "\(error.message)")
        }
    }

    @Test("questions: one per program and destination; answers make rules; answered questions close")
    func promptBook() {
        var book = FirewallPromptBook()
        let now = Date()
        let first = book.ask(about: Self.flow(program: "/usr/bin/curl", host: "games.test"), now: now)
        let again = book.ask(about: Self.flow(program: "/usr/bin/curl", host: "games.test"), now: now)
        let other = book.ask(about: Self.flow(program: "/usr/bin/python3", host: "games.test"), now: now)
        let byAddress = book.ask(about: Self.flow(program: "/usr/bin/curl", address: "2001:db8::7"), now: now)
        #expect(first.isNew && !again.isNew && first.id == again.id)
        #expect(other.isNew && other.id != first.id)
        #expect(book.open.map(\.flows) == [2, 1, 1])
        #expect(book.answer(first.id, allow: true, anyDestination: false)?.description == "allow /usr/bin/curl games.test")
        #expect(book.answer(first.id, allow: true, anyDestination: false) == nil, "answered once")
        #expect(book.answer(other.id, allow: false, anyDestination: true)?.description == "deny /usr/bin/python3 *")
        #expect(book.answer(byAddress.id, allow: false, anyDestination: false)?.description == "deny /usr/bin/curl 2001:db8::7/128")
        #expect(book.open.isEmpty)
    }

    @Test("a newer answer goes first and replaces an equal older rule")
    func prepending() throws {
        let rules = try FirewallRules(text: "deny /usr/bin/curl games.test\nallow * *\n")
        let answer = try FirewallRules.rule(["allow", "/usr/bin/curl", "games.test"], at: "answer")
        let updated = rules.prepending(answer).prepending(answer)
        #expect(updated.text == "allow /usr/bin/curl games.test\ndeny /usr/bin/curl games.test\nallow * *\n")
        #expect(updated.match(Self.flow(program: "/usr/bin/curl", host: "games.test"))?.action == .allow)
    }

    @Test("property: random rule files never crash the parser; what parses prints and reads back the same", arguments: 0..<4)
    func fuzz(seed: Int) {
        var random = SplitMix64(state: UInt64(seed) &+ 991)
        let words = ["allow", "deny", "*", "/usr/bin/curl", "curl", "school.test", "10.0.0.0/8", "::1", "#", "bad!", "", "\t", "ALLOW", "a.b"]
        for _ in 0..<2_000 {
            let line = (0..<Int.random(in: 0...5, using: &random)).map { _ in words.randomElement(using: &random)! }.joined(separator: " ")
            if let rules = try? FirewallRules(text: line) {
                #expect((try? FirewallRules(text: rules.text)) == rules, "\(line)")
            }
        }
    }
}
