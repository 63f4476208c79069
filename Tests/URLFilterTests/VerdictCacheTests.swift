import Testing
@testable import URLFilter

@Suite("Verdict cache")
struct VerdictCacheTests {
    @Test func boundedBySizeAndAge() {
        let cache = VerdictCache(capacity: 3, lifetime: 10)
        for (index, key) in ["a", "b", "c", "d"].enumerated() { cache.store(.deny, for: key, now: Double(index)) }
        #expect(cache.count == 3)
        #expect(cache.verdict(for: "a", now: 4) == nil)  // the oldest went first
        #expect(cache.verdict(for: "d", now: 4) == .deny)
        #expect(cache.verdict(for: "b", now: 11) == nil)  // older than 10 s
        cache.store(.allow, for: "b", now: 12)
        #expect(cache.verdict(for: "b", now: 12) == .allow)
        cache.removeAll()
        #expect(cache.count == 0)
    }

    @Test func manyReStoresKeepTheLogBounded() {
        let cache = VerdictCache(capacity: 100, lifetime: 1)
        for round in 0..<1000 {
            for key in 0..<50 { _ = cache.verdict(for: "k\(key)", now: Double(round) * 2); cache.store(.deny, for: "k\(key)", now: Double(round) * 2) }
        }
        #expect(cache.count == 50)
        #expect(cache.verdict(for: "k7", now: 1998) == .deny)
    }
}
