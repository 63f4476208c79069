import Foundation
import FlowInspection
import NetExtCore
import Testing

/// The flow table, the school filter's rules and the steering rules.
@Suite("Content filter: flow tracking, rules, steering")
struct FilterDecisionTests {
    let start = ContinuousClock.now

    func classify(_ tracker: inout FlowTracker, _ bytes: [UInt8], outbound: Bool = true, after: Duration = .zero) -> FlowTracker.Decision {
        let packet = FlowPacket(bytes)!
        return bytes.withUnsafeBytes { tracker.classify(packet, bytes: $0, isOutbound: outbound, owner: SourceApplication(uid: 1000, gid: 1000), now: start + after) }
    }

    @Test("TCP: the handshake passes; the ClientHello's server name completes the flow and it is asked about once")
    func tcpFlowLearnsServerName() throws {
        var tracker = FlowTracker()
        #expect(classify(&tracker, FilterParsingTests.tcp4(flags: FlowPacket.syn)) == .pass)
        #expect(classify(&tracker, FilterParsingTests.tcp4(flags: FlowPacket.ack)) == .pass)
        let hello = try FilterParsingTests.clientHello()
        // Half of the ClientHello: still learning.
        #expect(classify(&tracker, FilterParsingTests.tcp4(payload: Array(hello[..<200]))) == .pass)
        guard case .ask(let flow) = classify(&tracker, FilterParsingTests.tcp4(payload: Array(hello[200...]))) else {
            Issue.record("not asked")
            return
        }
        #expect(flow.remoteHostname == "www.example.test")
        #expect(flow.direction == .outbound && flow.transport == .tcp)
        #expect(flow.localAddress == "198.51.100.2" && flow.remoteEndpoint == "203.0.113.2:443")
        #expect(flow.sourceApplication == SourceApplication(uid: 1000, gid: 1000))
        #expect(classify(&tracker, FilterParsingTests.tcp4(flags: FlowPacket.ack)) == .wait(flowID: flow.id))
        let decided = tracker.decide(flowID: flow.id, .drop, now: start) != nil
        #expect(decided)
        #expect(classify(&tracker, FilterParsingTests.tcp4(flags: FlowPacket.ack)) == .apply(.drop))
        let decidedAgain = tracker.decide(flowID: flow.id, .allow, now: start) != nil
        #expect(!decidedAgain, "a verdict is given once")
    }

    @Test("HTTP: the request's Host and URL are learned")
    func httpFlow() {
        var tracker = FlowTracker()
        _ = classify(&tracker, FilterParsingTests.tcp4(flags: FlowPacket.syn))
        let request = Array("GET /private/x HTTP/1.1\r\nHost: school.test\r\n\r\n".utf8)
        guard case .ask(let flow) = classify(&tracker, FilterParsingTests.tcp4(payload: request)) else {
            Issue.record("not asked")
            return
        }
        #expect(flow.remoteHostname == "school.test")
        #expect(flow.url == "http://school.test/private/x")
    }

    @Test("a server that speaks first gets the flow judged at once; replies belong to the same flow")
    func serverFirst() {
        var tracker = FlowTracker()
        _ = classify(&tracker, FilterParsingTests.tcp4(flags: FlowPacket.syn))
        // The reply direction: swap addresses and ports by building the inbound packet.
        var banner = FilterParsingTests.tcp4(payload: Array("SSH-2.0-x\r\n".utf8))
        banner.replaceSubrange(12..<20, with: [203, 0, 113, 2, 198, 51, 100, 2])
        banner.replaceSubrange(20..<24, with: [0x01, 0xbb, 0x9c, 0x40])
        guard case .ask(let flow) = classify(&tracker, banner, outbound: false) else {
            Issue.record("not asked")
            return
        }
        #expect(flow.direction == .outbound && flow.remoteHostname == nil)
    }

    @Test("UDP and ICMP flows are asked about at their first packet; inbound flows say so")
    func datagramFlows() {
        var tracker = FlowTracker()
        guard case .ask(let flow) = classify(&tracker, FilterParsingTests.udp6WithHopByHop(payload: [1]), outbound: false) else {
            Issue.record("not asked")
            return
        }
        #expect(flow.direction == .inbound && flow.transport == .udp)
        #expect(flow.remoteAddress == "2001:db8:1::2" && flow.localPort == 7 && flow.remotePort == 5353)
    }

    @Test("an unanswered flow is overdue after the deadline; decided and idle flows are forgotten")
    func expiry() {
        var tracker = FlowTracker()
        guard case .ask(let flow) = classify(&tracker, FilterParsingTests.udp6WithHopByHop(payload: [1])) else {
            Issue.record("not asked")
            return
        }
        let early = tracker.expire(now: start + .seconds(1), deadline: .seconds(2))
        #expect(early.isEmpty)
        let overdue = tracker.expire(now: start + .seconds(3), deadline: .seconds(2))
        #expect(overdue.map(\.id) == [flow.id])
        #expect(tracker.waitingFlows.map(\.id) == [flow.id])
        tracker.decide(flowID: flow.id, .allow, now: start + .seconds(3))
        #expect(tracker.count == 1)
        _ = tracker.expire(now: start + .seconds(14), deadline: .seconds(2))
        #expect(tracker.count == 0)
        _ = classify(&tracker, FilterParsingTests.tcp4(flags: FlowPacket.syn))
        _ = tracker.expire(now: start + .seconds(121), deadline: .seconds(2))
        #expect(tracker.count == 0)
    }

    @Test("rules: host names with subdomains, addresses and prefixes, URL prefixes")
    func rules() throws {
        let rules = try FilterRules(text: """
            # school rules
            blocked.test
            Games.Example.TEST   # case does not matter
            203.0.113.9
            fd00:77::/64
            http://school.test/private/
            http://intranet.test:8080/admin
            """)
        #expect(rules.count == 6)
        func flow(host: String? = nil, address: String = "203.0.113.2", url: String? = nil) -> FilterFlow {
            FilterFlow(id: 1, direction: .outbound, transport: .tcp, localAddress: "198.51.100.2", localPort: 1, remoteAddress: address, remotePort: 443, remoteHostname: host, url: url)
        }
        #expect(rules.verdict(for: flow(host: "www.blocked.test")) == .drop)
        #expect(rules.blockingRule(for: flow(host: "a.b.blocked.test")) == "blocked.test")
        #expect(rules.verdict(for: flow(host: "notblocked.test")) == .allow)
        #expect(rules.verdict(for: flow(host: "games.example.test")) == .drop)
        #expect(rules.verdict(for: flow(address: "203.0.113.9")) == .drop)
        #expect(rules.verdict(for: flow(address: "fd00:77::1234")) == .drop)
        #expect(rules.verdict(for: flow(address: "fd00:78::1")) == .allow)
        #expect(rules.verdict(for: flow(host: "school.test", url: "http://School.test/private/a")) == .drop)
        #expect(rules.verdict(for: flow(host: "school.test", url: "http://school.test/privateer")) == .allow)
        #expect(rules.verdict(for: flow(host: "intranet.test", url: "http://intranet.test:8080/admin/x")) == .drop)
        #expect(rules.verdict(for: flow(host: "intranet.test", url: "http://intranet.test/admin/x")) == .allow)
    }

    @Test("a malformed rule is refused with its line number")
    func malformedRule() {
        #expect(throws: NetExtError.self) { try FilterRules(text: "ok.test\nbad host\n") }
        do { _ = try FilterRules(text: "ok.test\n\nhttps://x.test/path\n") } catch {
            #expect(error.message.contains("line 3"))
            #expect(error.message.contains("encrypted"))
        }
    }

    @Test("steering: both hooks jump to netextd's chains; decided flows return before the queue; bypass only when failing open")
    func steering() {
        let open = FilterSteering(queueNumber: 7100, failOpen: true).restoreInput()
        let closed = FilterSteering(queueNumber: 9, failOpen: false).restoreInput(ipv6: true)
        #expect(open.contains("-I OUTPUT 1 -j NETEXTD-FLT-OUT") && open.contains("-I INPUT 1 -j NETEXTD-FLT-IN"))
        #expect(open.contains("--queue-num 7100 --queue-bypass"))
        #expect(closed.contains("--queue-num 9") && !closed.contains("--queue-bypass"))
        for chain in ["NETEXTD-FLT-OUT", "NETEXTD-FLT-IN"] {
            let rules = open.split(separator: "\n").filter { $0.hasPrefix("-A \(chain) ") }
            #expect(rules.first?.contains("connmark --mark 0x20000000/0x60000000 -j RETURN") == true, "allowed flows leave first")
            #expect(rules.last?.contains("NFQUEUE") == true, "the queue comes last")
        }
        #expect(FilterSteering.mark(for: .allow) & FilterSteering.verdictMask == FilterSteering.allowMark)
        #expect(FilterSteering.removalCommands.contains(["-t", "filter", "-X", "NETEXTD-FLT-OUT"]))
    }
}

extension FilterDecisionTests {
    @Test("a flow first seen from the answering side (handshakes skip the queue) belongs to the side that opened it")
    func firstSeenFromReply() {
        var tracker = FlowTracker()
        var banner = FilterParsingTests.tcp4(payload: Array("SSH-2.0-x\r\n".utf8))
        banner.replaceSubrange(12..<20, with: [203, 0, 113, 2, 198, 51, 100, 2])
        banner.replaceSubrange(20..<24, with: [0x01, 0xbb, 0x9c, 0x40])
        let packet = FlowPacket(banner)!
        let decision = banner.withUnsafeBytes { tracker.classify(packet, bytes: $0, isOutbound: false, isReply: true, owner: nil, now: start) }
        guard case .ask(let flow) = decision else {
            Issue.record("not asked: \(decision)")
            return
        }
        #expect(flow.direction == .outbound && flow.remotePort == 443 && flow.localPort == 40000)
    }

    @Test("a later TCP connection on the same ports is a new flow, not the decided one; packets of the decided one still get its verdict")
    func portReuse() {
        var tracker = FlowTracker()
        let request = Array("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n".utf8)
        guard case .ask(let first) = classify(&tracker, FilterParsingTests.tcp4(payload: request, sequence: 1_000)) else {
            Issue.record("not asked")
            return
        }
        tracker.decide(flowID: first.id, .drop, now: start)
        #expect(classify(&tracker, FilterParsingTests.tcp4(payload: [1], sequence: 1_000 + UInt32(request.count))) == .apply(.drop))
        guard case .ask(let second) = classify(&tracker, FilterParsingTests.tcp4(payload: request, sequence: 3_000_000_000)) else {
            Issue.record("the reused ports were taken for the old flow")
            return
        }
        #expect(second.id != first.id)
    }
}
