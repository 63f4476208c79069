import NetExtCore
import Testing

/// A data provider's kernel rules (`FilterSettings`) as steering rules.
@Suite("Content filter: kernel rules from FilterSettings")
struct FilterSettingsTests {
    static func inputOf(_ settings: FilterSettings, ipv6: Bool = false) -> [String] {
        FilterSteering(queueNumber: 7100, failOpen: true, settings: settings).restoreInput(ipv6: ipv6).split(separator: "\n").map(String.init)
    }

    @Test("rules become settings-chain lines per family and direction, first match first; the main chains call them before the queue")
    func lines() throws {
        let settings = FilterSettings(rules: [
            FilterSettings.Rule(remotePrefix: try IPPrefix("203.0.113.9/32"), action: .drop),
            FilterSettings.Rule(remotePort: 443, transport: .tcp, direction: .outbound, action: .filterData),
            FilterSettings.Rule(remotePrefix: try IPPrefix("2001:db8::/32"), transport: .icmpv6, action: .allow),
            FilterSettings.Rule(localPort: 22, transport: .tcp, direction: .inbound, action: .allow),
        ], defaultAction: .allow)
        try settings.validate()
        let v4 = Self.inputOf(settings)
        let out = v4.filter { $0.hasPrefix("-A \(FilterSteering.settingsOutputChain) ") }
        #expect(out == [
            "-A NETEXTD-FLT-SET-OUT -d 203.0.113.9/32 -j CONNMARK --set-xmark 0x40000000/0x60000000",
            "-A NETEXTD-FLT-SET-OUT -d 203.0.113.9/32 -j RETURN",
            "-A NETEXTD-FLT-SET-OUT -p tcp --dport 443 -j RETURN",
            "-A NETEXTD-FLT-SET-OUT -j CONNMARK --set-xmark 0x20000000/0x60000000",
        ])
        let input = v4.filter { $0.hasPrefix("-A \(FilterSteering.settingsInputChain) ") }
        #expect(input.contains("-A NETEXTD-FLT-SET-IN -s 203.0.113.9/32 -j RETURN"))
        #expect(input.contains("-A NETEXTD-FLT-SET-IN -p tcp --dport 22 -j CONNMARK --set-xmark 0x20000000/0x60000000"))
        #expect(!input.contains { $0.contains("443") }, "an outbound rule is not an inbound one")
        let v6 = Self.inputOf(settings, ipv6: true)
        #expect(v6.contains("-A NETEXTD-FLT-SET-OUT -p ipv6-icmp -d 2001:db8::/32 -j CONNMARK --set-xmark 0x20000000/0x60000000"))
        #expect(!v6.contains { $0.contains("203.0.113.9") }, "IPv4 rules stay out of ip6tables")
        // In the main chain, the call comes after the exemptions and before the queue.
        let main = v4.filter { $0.hasPrefix("-A \(FilterSteering.outputChain) ") }
        let call = try #require(main.firstIndex(of: "-A NETEXTD-FLT-OUT -m conntrack --ctdir ORIGINAL -j NETEXTD-FLT-SET-OUT"))
        let queue = try #require(main.firstIndex { $0.contains("NFQUEUE") })
        #expect(call < queue && main[call + 1] == "-A NETEXTD-FLT-OUT -m connmark --mark 0x20000000/0x60000000 -j RETURN")
    }

    @Test("without settings nothing changes; updates rewrite the chains without adding jumps")
    func noSettings() {
        let plain = FilterSteering(queueNumber: 7100, failOpen: false).restoreInput()
        #expect(!plain.contains("SET-"))
        let update = FilterSteering(queueNumber: 7100, failOpen: false, settings: FilterSettings(rules: [])).restoreInput(jumps: false)
        #expect(!update.contains("-I OUTPUT") && !update.contains("-I INPUT"))
    }

    @Test("what the kernel rules cannot express is refused with the rule's number")
    func validation() {
        #expect(throws: NetExtError.self) { try FilterSettings(rules: [], defaultAction: .drop).validate() }
        do {
            try FilterSettings(rules: [FilterSettings.Rule(action: .allow), FilterSettings.Rule(remotePort: 53, action: .allow)]).validate()
            Issue.record("a port without tcp or udp was accepted")
        } catch {
            #expect(error.message.contains("rule 1"))
        }
        #expect(throws: NetExtError.self) {
            try FilterSettings(rules: [FilterSettings.Rule(remotePrefix: try IPPrefix("2001:db8::/32"), transport: .icmp, action: .drop)]).validate()
        }
    }
}
