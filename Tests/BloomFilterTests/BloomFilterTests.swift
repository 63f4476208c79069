import Foundation
import Testing
@testable import BloomFilter

@Suite("Bloom prefilter")
struct BloomFilterTests {
    /// MurmurHash3_x86_32 reference values (checked against the reference implementation, here
    /// through Python's mmh3).
    @Test("MurmurHash3_x86_32 matches the reference", arguments: [
        ("", UInt32(0), UInt32(0)), ("", 1, 0x514E_28B7), ("", 0xFFFF_FFFF, 0x81F1_6F39), ("\0\0\0\0", 0, 0x2362_F9DE),
        ("aaaa", 0x9747_B28C, 0x5A97_808A), ("abc", 0, 0xB3DD_93FA), ("Hello, world!", 0x9747_B28C, 0x2488_4CBA),
        ("The quick brown fox jumps over the lazy dog", 0x9747_B28C, 0x2FA8_26CD),
    ])
    func murmur(text: String, seed: UInt32, expected: UInt32) {
        #expect(MurmurHash3.x86_32(text, seed: seed) == expected)
    }

    /// FNV-1a 32 reference values (from the FNV reference test suite).
    @Test("FNV-1a 32 matches the reference", arguments: [("", UInt32(0x811C_9DC5)), ("a", 0xE40C_292C), ("foobar", 0xBF9C_F968)])
    func fnv(text: String, expected: UInt32) {
        #expect(FNV1a.hash32(text) == expected)
    }

    @Test("sizing follows the formulas")
    func sizing() throws {
        let filter = try BloomFilter(capacity: 1000, falsePositiveRate: 0.01, murmurSeed: 1)
        #expect(filter.bitCount == 9586)  // ceil(−1000·ln 0.01 / ln²2)
        #expect(filter.hashCount == 7)    // ceil(9586 / 1000 · ln 2)
        #expect(filter.data.count == 1199)
    }

    /// A filter built independently (Python, reference MurmurHash3) from the same keys has the
    /// same bytes: the bit layout is the one Apple's prefilter uses.
    @Test("bytes match an independently built prefilter")
    func vector() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/bloom/prefilter-vector.json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let items = try #require(object["items"] as? [String])
        let rate = try #require(object["falsePositiveRate"] as? Double)
        let seed = try #require(object["murmurSeed"] as? Int)
        var filter = try BloomFilter(capacity: items.count, falsePositiveRate: rate, murmurSeed: UInt32(seed))
        #expect(filter.bitCount == object["bitCount"] as? Int)
        #expect(filter.hashCount == object["hashCount"] as? Int)
        for item in items { filter.insert(item) }
        let encoded = try #require(object["data"] as? String)
        let expected = [UInt8](try #require(Data(base64Encoded: encoded)))
        #expect(filter.data == expected)
        let loaded = try BloomFilter(data: expected, bitCount: filter.bitCount, hashCount: filter.hashCount, murmurSeed: filter.murmurSeed)
        for item in items { #expect(loaded.contains(item)) }
    }

    @Test("no false negatives, and the false-positive rate is near the target", arguments: [0.01, 0.001])
    func properties(rate: Double) throws {
        var generator = SystemRandomNumberGenerator()
        let count = 20_000
        var filter = try BloomFilter(capacity: count, falsePositiveRate: rate, murmurSeed: UInt32.random(in: 0...UInt32.max, using: &generator))
        let keys = (0..<count).map { "k\($0)-\(UInt64.random(in: 0...UInt64.max, using: &generator))" }
        for key in keys { filter.insert(key) }
        for key in keys { #expect(filter.contains(key), "false negative for \(key)") }
        let trials = 200_000
        var positives = 0
        for index in 0..<trials where filter.contains("absent-\(index)-\(UInt64.random(in: 0...UInt64.max, using: &generator))") { positives += 1 }
        let measured = Double(positives) / Double(trials)
        #expect(measured < rate * 1.5, "measured \(measured) for target \(rate)")
        #expect(abs(filter.expectedFalsePositiveRate(afterInserting: count) - rate) < rate * 0.2)
    }

    @Test("bad parameters are refused, naming them")
    func refusals() {
        #expect(throws: BloomFilterError.invalidParameter("data holds 2 bytes; bitCount 48 needs 6")) { try BloomFilter(data: [0, 0], bitCount: 48, hashCount: 7, murmurSeed: 0) }
        #expect(throws: BloomFilterError.self) { try BloomFilter(capacity: 0, falsePositiveRate: 0.01, murmurSeed: 0) }
        #expect(throws: BloomFilterError.self) { try BloomFilter(capacity: 10, falsePositiveRate: 1.5, murmurSeed: 0) }
        #expect(throws: BloomFilterError.self) { try BloomFilter(data: [0], bitCount: 8, hashCount: 0, murmurSeed: 0) }
    }
}
