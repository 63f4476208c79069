import HTTPCapsules
import NetExtCore
import Testing

/// A ROUTE_ADVERTISEMENT range as routes: exact cover by aligned prefixes, none that two could
/// merge, checked on examples and on random ranges of both families.
@Suite("connect-ip: address ranges as prefixes")
struct IPRangePrefixesTests {
    @Test("examples: a /24, a single address, an unaligned range, everything, an IPv6 /64, a reversed range")
    func examples() {
        #expect(IPRangePrefixes.covering(start: [10, 20, 0, 0], end: [10, 20, 0, 255]).map(\.description) == ["10.20.0.0/24"])
        #expect(IPRangePrefixes.covering(start: [192, 0, 2, 7], end: [192, 0, 2, 7]).map(\.description) == ["192.0.2.7/32"])
        #expect(IPRangePrefixes.covering(start: [192, 0, 2, 1], end: [192, 0, 2, 6]).map(\.description)
            == ["192.0.2.1/32", "192.0.2.2/31", "192.0.2.4/31", "192.0.2.6/32"])
        #expect(IPRangePrefixes.covering(start: [0, 0, 0, 0], end: [255, 255, 255, 255]).map(\.description) == ["0.0.0.0/0"])
        #expect(IPRangePrefixes.covering(start: [UInt8](repeating: 0, count: 16), end: [UInt8](repeating: 255, count: 16)).map(\.description) == ["::/0"])
        let v6Start: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8)
        let v6End: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1] + [UInt8](repeating: 255, count: 8)
        #expect(IPRangePrefixes.covering(start: v6Start, end: v6End).map(\.description) == ["2001:db8:0:1::/64"])
        #expect(IPRangePrefixes.covering(start: [10, 0, 0, 9], end: [10, 0, 0, 1]).isEmpty)
        #expect(IPRangePrefixes.covering(start: [10, 0, 0, 1], end: [UInt8](repeating: 0, count: 16)).isEmpty)
    }

    @Test("random ranges (2,000 of each family): the prefixes are aligned, follow one another from start to end, and no two neighbours could be one")
    func randomRanges() {
        var generator = SystemRandomNumberGenerator()
        for count in [4, 16] {
            for _ in 0..<2_000 {
                var start = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
                var end = start
                // Ranges of every scale: vary only the last few bytes most of the time.
                let varied = Int.random(in: 1...count, using: &generator)
                for index in (count - varied)..<count { end[index] = UInt8.random(in: 0...255, using: &generator) }
                if Self.value(end) < Self.value(start) { swap(&start, &end) }
                let prefixes = IPRangePrefixes.covering(start: start, end: end)
                #expect(!prefixes.isEmpty)
                var next = Self.value(start)
                for (index, prefix) in prefixes.enumerated() {
                    let host = count * 8 - prefix.length
                    let first = Self.value(prefix.address)
                    #expect(first == next, "contiguous")
                    #expect(host == 0 || first & Self.span(host) == 0, "aligned: \(prefix)")
                    let last = first + Self.span(host)
                    if index + 1 < prefixes.count {
                        let following = prefixes[index + 1]
                        let mergeable = following.length == prefix.length && host < count * 8 && first & Self.span(host + 1) == 0
                        #expect(!mergeable, "\(prefix) and \(following) are one prefix")
                        next = last + 1
                    } else {
                        #expect(last == Self.value(end), "ends at the range's end")
                    }
                }
            }
        }
    }

    static func value(_ bytes: [UInt8]) -> UInt128 { bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) } }
    static func span(_ bits: Int) -> UInt128 { bits >= 128 ? UInt128.max : (UInt128(1) << bits) - 1 }
}
