import FlowInspection
import NetExtCore
import NetExtTestSupport
import Testing

/// DNS answers as the content filter reads them, and the names it keeps from them.
@Suite("Content filter: names from DNS answers")
struct DNSAnswerTests {
    static func name(_ text: String) -> [UInt8] {
        text.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
    }

    static func record(_ owner: [UInt8], type: UInt16, ttl: UInt32 = 300, data: [UInt8]) -> [UInt8] {
        owner + [UInt8(type >> 8), UInt8(type & 0xff), 0, 1] + withUnsafeBytes(of: ttl.bigEndian, Array.init)
            + [UInt8(data.count >> 8), UInt8(data.count & 0xff)] + data
    }

    /// A response to an A query for www.school.test: a CNAME to cdn.example.test (its owner a
    /// compression pointer to the question), then two A records and an AAAA for the CNAME target,
    /// and an A record for an unrelated name.
    static func response() -> [UInt8] {
        var message: [UInt8] = [0x12, 0x34, 0x81, 0x80, 0, 1, 0, 5, 0, 0, 0, 0]
        message += name("www.school.test") + [0, 1, 0, 1]
        let pointer: [UInt8] = [0xc0, 12]
        let cdnOffset = message.count + 12  // the CNAME record's data starts after its 12-byte fixed part
        message += record(pointer, type: 5, data: name("cdn.example.test"))
        let cdn: [UInt8] = [0xc0, UInt8(cdnOffset)]
        message += record(cdn, type: 1, ttl: 30, data: [203, 0, 113, 7])
        message += record(cdn, type: 1, data: [203, 0, 113, 8])
        message += record(cdn, type: 28, data: [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [7])
        message += record(name("other.test"), type: 1, data: [192, 0, 2, 1])
        return message
    }

    @Test("addresses of the question's name, through CNAMEs and compression; unrelated records ignored")
    func parse() throws {
        let answer = try DNSAnswerAddresses(parsing: Self.response())
        #expect(answer.name == "www.school.test")
        #expect(answer.addresses.map(\.bytes) == [[203, 0, 113, 7], [203, 0, 113, 8], [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [7]])
        #expect(answer.addresses.first?.ttl == 30)
    }

    @Test("queries, errors and cut messages are refused with the offset at fault")
    func refused() {
        var query = Self.response()
        query[2] = 0x01
        #expect(throws: DNSParseError.malformed(offset: 2, "a query, not a response")) { try DNSAnswerAddresses(parsing: query) }
        var nxdomain = Self.response()
        nxdomain[3] = 0x83
        #expect(throws: DNSParseError.malformed(offset: 3, "response code 3")) { try DNSAnswerAddresses(parsing: nxdomain) }
        let message = Self.response()
        for cut in 0..<message.count {
            #expect(throws: DNSParseError.self) { try DNSAnswerAddresses(parsing: Array(message[..<cut])) }
        }
    }

    @Test("property: mutated answers never crash the parser", arguments: 0..<4)
    func fuzz(seed: Int) {
        var random = SplitMix64(state: UInt64(seed) &+ 53)
        let valid = Self.response()
        for _ in 0..<4_000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if let answer = try? DNSAnswerAddresses(parsing: Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))) {
                #expect(answer.addresses.allSatisfy { $0.bytes.count == 4 || $0.bytes.count == 16 })
            }
        }
    }

    @Test("the cache: newest answer wins, lives at least a minute and at most its TTL beyond that, bounded")
    func cache() throws {
        let start = ContinuousClock.now
        var cache = DNSNameCache()
        cache.record(try DNSAnswerAddresses(parsing: Self.response()), now: start)
        #expect(cache.name(for: [203, 0, 113, 7], now: start + .seconds(59)) == "www.school.test", "a 30 s TTL lives a minute")
        #expect(cache.name(for: [203, 0, 113, 7], now: start + .seconds(61)) == nil)
        #expect(cache.name(for: [203, 0, 113, 8], now: start + .seconds(299)) == "www.school.test")
        #expect(cache.name(for: [192, 0, 2, 1], now: start) == nil, "an unrelated record names nothing")
        var many = DNSNameCache()
        for index in 0..<(DNSNameCache.capacity + 100) {
            let address: [UInt8] = [10, UInt8(index >> 16 & 0xff), UInt8(index >> 8 & 0xff), UInt8(index & 0xff)]
            var message: [UInt8] = [0, 0, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0] + Self.name("h\(index).test") + [0, 1, 0, 1]
            message += Self.record([0xc0, 12], type: 1, data: address)
            many.record(try DNSAnswerAddresses(parsing: message), now: start)
        }
        #expect(many.count == DNSNameCache.capacity)
        #expect(many.name(for: [10, 0, 0, 0], now: start) == nil, "the oldest went first")
        #expect(many.name(for: [10, 0, 0x40, 0x63], now: start) == "h16483.test")
    }

    @Test("a new flow with no name of its own takes the name its address was looked up as")
    func trackerUsesNames() throws {
        let start = ContinuousClock.now
        var tracker = FlowTracker()
        var message: [UInt8] = [0, 0, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0] + Self.name("udp.blocked.test") + [0, 1, 0, 1]
        message += Self.record([0xc0, 12], type: 1, data: [203, 0, 113, 2])
        tracker.dnsNames.record(try DNSAnswerAddresses(parsing: message), now: start)
        let probe = FilterParsingTests.udp4(payload: [1, 2, 3])
        let packet = try #require(FlowPacket(probe))
        let decision = probe.withUnsafeBytes { tracker.classify(packet, bytes: $0, isOutbound: true, owner: nil, now: start) }
        guard case .ask(let flow) = decision else {
            Issue.record("not asked: \(decision)")
            return
        }
        #expect(flow.remoteHostname == "udp.blocked.test")
    }

    @Test("steering: DNS answers are logged first in the input chain, before decided flows return; only when asked")
    func steeringLogsAnswers() {
        let lines = FilterSteering(queueNumber: 7100, failOpen: true, dnsLogGroup: 7100).restoreInput().split(separator: "\n").map(String.init)
        let inputRules = lines.filter { $0.hasPrefix("-A \(FilterSteering.inputChain) ") }
        #expect(inputRules.first == "-A \(FilterSteering.inputChain) -p udp --sport 53 -j NFLOG --nflog-group 7100")
        #expect(!lines.contains { $0.hasPrefix("-A \(FilterSteering.outputChain) ") && $0.contains("NFLOG") }, "only answers arriving")
        #expect(!FilterSteering(queueNumber: 7100, failOpen: true).restoreInput().contains("NFLOG"))
    }
}
