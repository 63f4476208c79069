import Testing
@testable import BloomFilter

@Suite("Four lookups at once")
struct BloomFilterFourWayTests {
    @Test func agreesWithSingleLookupsForEveryLengthMix() throws {
        var filter = try BloomFilter(capacity: 2000, falsePositiveRate: 0.01, murmurSeed: 7)
        for i in 0..<2000 where i % 2 == 0 { filter.insert("key-\(i)/" + String(repeating: "x", count: i % 37)) }
        let keys = (0..<400).map { "key-\($0)/" + String(repeating: "x", count: $0 % 37) }
        var bytes = keys.map { Array($0.utf8) }
        bytes.append([])  // an empty key in the mix
        for start in stride(from: 0, to: bytes.count - 4, by: 3) {
            let four = Array(bytes[start..<(start + 4)])
            let single = four.map { key in key.withUnsafeBytes { filter.contains(bytes: $0) } }
            let batched = four[0].withUnsafeBytes { a in four[1].withUnsafeBytes { b in four[2].withUnsafeBytes { c in four[3].withUnsafeBytes { d in
                filter.contains(a, b, c, d) } } } }
            #expect([batched.0, batched.1, batched.2, batched.3] == single)
        }
        // No false negatives through the batched path.
        let members = (0..<8).map { Array("key-\($0 * 2)/\(String(repeating: "x", count: ($0 * 2) % 37))".utf8) }
        let r = members[0].withUnsafeBytes { a in members[1].withUnsafeBytes { b in members[2].withUnsafeBytes { c in members[3].withUnsafeBytes { d in
            filter.contains(a, b, c, d) } } } }
        #expect(r.0 && r.1 && r.2 && r.3)
    }
}
