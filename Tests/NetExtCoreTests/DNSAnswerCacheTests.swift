import NetExtCore
import NetExtTestSupport
import Testing

/// The resolver's answer cache: TTLs (RFC 1035 §3.2.1), negative answers (RFC 2308 §5), what is
/// never kept, the asker's identifier and case, the bound on entries.
@Suite("DNS answer cache")
struct DNSAnswerCacheTests {
    static func query(_ name: String, type: UInt16 = 1, id: UInt16 = 1) -> [UInt8] {
        var message: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") { message += [UInt8(label.utf8.count)] + Array(label.utf8) }
        return message + [0, UInt8(type >> 8), UInt8(type & 0xff), 0, 1]
    }

    static func ttl(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)] }

    /// An answer with A records of the given TTLs (and an OPT record, whose "TTL" is flags).
    static func answer(to query: [UInt8], ttls: [UInt32], rcode: UInt8 = 0, truncated: Bool = false) -> [UInt8] {
        var message = query
        message[2] = 0x81 | (truncated ? 0x02 : 0)
        message[3] = 0x80 | rcode
        message[7] = UInt8(ttls.count)
        message[11] = 1
        for (index, value) in ttls.enumerated() { message += [0xc0, 12, 0, 1, 0, 1] + ttl(value) + [0, 4, 192, 0, 2, UInt8(index)] }
        return message + [0, 0, 41, 4, 0xd0, 0x00, 0x00, 0x80, 0x00, 0, 0]
    }

    /// A negative answer with an SOA in the authority section (TTL `soaTTL`, MINIMUM `minimum`).
    static func negative(to query: [UInt8], rcode: UInt8, soaTTL: UInt32, minimum: UInt32) -> [UInt8] {
        var message = query
        message[2] = 0x81
        message[3] = 0x80 | rcode
        message[9] = 1
        let rdata: [UInt8] = [0xc0, 12, 0xc0, 12] + ttl(1) + ttl(2) + ttl(3) + ttl(4) + ttl(minimum)
        return message + [0xc0, 12, 0, 6, 0, 1] + ttl(soaTTL) + [0, UInt8(rdata.count)] + rdata
    }

    static func ttls(of answer: [UInt8]) -> [UInt32] {
        var offset = 12
        _ = try? DNSQuery.readName(answer, at: &offset)
        offset += 4
        var found: [UInt32] = []
        let count = Int(answer[7])
        for _ in 0..<count {
            offset += 2 + 4
            found.append(UInt32(answer[offset]) << 24 | UInt32(answer[offset + 1]) << 16 | UInt32(answer[offset + 2]) << 8 | UInt32(answer[offset + 3]))
            offset += 4 + 2 + 4
        }
        return found
    }

    @Test("a kept answer comes back under the asker's identifier and case, its TTLs counted down, until the smallest runs out")
    func positive() throws {
        var cache = DNSAnswerCache()
        let asked = Self.query("www.example.test", id: 7)
        cache.store(Self.answer(to: asked, ttls: [300, 60]), for: asked, now: 1000)
        let again = Self.query("WWW.Example.Test", id: 99)
        let found = cache.answer(to: again, now: 1030)
        let kept = try #require(found)
        #expect(kept[0] == 0 && kept[1] == 99)
        #expect(Array(kept[12..<30]) == Array(again[12..<30]), "the asker's own case")
        #expect(Self.ttls(of: kept) == [270, 30])
        #expect(Array(kept.suffix(11)) == [0, 0, 41, 4, 0xd0, 0x00, 0x00, 0x80, 0x00, 0, 0], "the OPT record's flags are not a TTL")
        let answer1 = cache.answer(to: again, now: 1060)
        #expect(answer1 == nil, "gone when the smallest TTL ran out")
        let answer2 = cache.answer(to: Self.query("www.example.test", type: 28), now: 1001)
        #expect(answer2 == nil, "another type is another entry")
        #expect(cache.hits == 1 && cache.misses == 2)
    }

    @Test("negative answers live min(SOA TTL, MINIMUM) (RFC 2308 §5); one without SOA is not kept")
    func negative() {
        var cache = DNSAnswerCache()
        let missing = Self.query("nothing.example.test")
        cache.store(Self.negative(to: missing, rcode: 3, soaTTL: 3600, minimum: 120), for: missing, now: 0)
        let answer3 = cache.answer(to: missing, now: 119)
        #expect(answer3 != nil)
        let answer4 = cache.answer(to: missing, now: 121)
        #expect(answer4 == nil)
        let noData = Self.query("www.example.test", type: 28)
        cache.store(Self.negative(to: noData, rcode: 0, soaTTL: 30, minimum: 900), for: noData, now: 0)
        let answer5 = cache.answer(to: noData, now: 29)
        #expect(answer5 != nil)
        let answer6 = cache.answer(to: noData, now: 31)
        #expect(answer6 == nil)
        var bare = Self.answer(to: missing, ttls: [])
        bare[3] = 0x83
        cache.store(bare, for: missing, now: 0)
        let answer7 = cache.answer(to: missing, now: 1)
        #expect(answer7 == nil)
    }

    @Test("SERVFAIL, truncated answers, TTL 0 and unparsable answers are never kept")
    func neverKept() {
        var cache = DNSAnswerCache()
        let asked = Self.query("www.example.test")
        cache.store(Self.answer(to: asked, ttls: [300], rcode: 2), for: asked, now: 0)
        cache.store(Self.answer(to: asked, ttls: [300], truncated: true), for: asked, now: 0)
        cache.store(Self.answer(to: asked, ttls: [0]), for: asked, now: 0)
        cache.store(Array(Self.answer(to: asked, ttls: [300]).dropLast(14)), for: asked, now: 0)
        #expect(cache.count == 0)
    }

    @Test("at most `capacity` answers: when full the oldest go, a 64th of the capacity at once")
    func bounded() {
        var cache = DNSAnswerCache(capacity: 128)
        for index in 0..<128 {
            let asked = Self.query("host\(index).example.test")
            cache.store(Self.answer(to: asked, ttls: [300]), for: asked, now: 0)
        }
        #expect(cache.count == 128)
        let newcomer = Self.query("newcomer.example.test")
        cache.store(Self.answer(to: newcomer, ttls: [300]), for: newcomer, now: 1)
        #expect(cache.count == 128 - 2 + 1, "the two oldest made room")
        let oldest = cache.answer(to: Self.query("host0.example.test"), now: 2)
        let third = cache.answer(to: Self.query("host2.example.test"), now: 2)
        let kept = cache.answer(to: newcomer, now: 2)
        #expect(oldest == nil && third != nil && kept != nil)
        for index in 0..<5000 {
            let asked = Self.query("many\(index).example.test")
            cache.store(Self.answer(to: asked, ttls: [300]), for: asked, now: 3)
        }
        #expect(cache.count <= 128)
        let latest = cache.answer(to: Self.query("many4999.example.test"), now: 4)
        #expect(latest != nil)
    }

    @Test("fuzzed answers and queries: stored or refused, never a crash")
    func fuzz() {
        var generator = SplitMix64(state: 2308)
        var cache = DNSAnswerCache(capacity: 50)
        let asked = Self.query("www.example.test")
        let seed = Self.negative(to: asked, rcode: 3, soaTTL: 60, minimum: 60)
        for round in 0..<3000 {
            var bytes = round % 2 == 0 ? seed : Self.answer(to: asked, ttls: [60, 30])
            for _ in 0..<Int.random(in: 1...5, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            if round % 5 == 0 { bytes.removeLast(Int.random(in: 0..<bytes.count, using: &generator)) }
            cache.store(bytes, for: round % 3 == 0 ? bytes : asked, now: Double(round))
            _ = cache.answer(to: round % 3 == 0 ? bytes : asked, now: Double(round) + 1)
        }
        #expect(cache.count <= 50)
    }
}
