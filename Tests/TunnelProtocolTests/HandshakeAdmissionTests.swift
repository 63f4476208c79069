import Foundation
import Testing
import TunnelProtocol

@Suite("Handshake admission under load: the rate estimate and the per-source limit")
struct HandshakeAdmissionTests {
    let start = Date(timeIntervalSinceReferenceDate: 1_000_000)

    @Test("below the limit no cookie is asked for; one initiation over it turns load on for a second")
    func loadFollowsTheRate() {
        var load = HandshakeLoad(limit: 100, now: start)
        // 100 spread over one second: at the limit, not over it.
        for index in 0..<100 {
            let atTheLimit = load.record(now: start.addingTimeInterval(Double(index) / 100))
            #expect(!atTheLimit)
        }
        // The 101st within the window tips it over.
        let overTheLimit = load.record(now: start.addingTimeInterval(0.995))
        #expect(overTheLimit)
        let stillHeld = load.record(now: start.addingTimeInterval(1.5))
        #expect(stillHeld, "held for a second after the last signal")
        // Quiet for more than two seconds: the window is empty and the hold has passed.
        let afterQuiet = load.record(now: start.addingTimeInterval(4))
        #expect(!afterQuiet)
    }

    @Test("the previous second counts in proportion to how much of it the window still covers")
    func slidingWindow() {
        var load = HandshakeLoad(limit: 1_000, now: start)
        for _ in 0..<800 { _ = load.record(now: start.addingTimeInterval(0.5)) }
        // Half-way into the next second half of those 800 are still in the window.
        #expect(abs(load.estimatedRate(now: start.addingTimeInterval(1.5)) - 400) < 1)
        _ = load.record(now: start.addingTimeInterval(1.5))
        #expect(abs(load.estimatedRate(now: start.addingTimeInterval(1.5)) - 401) < 1)
    }

    @Test("a queue an eighth full means load whatever the rate")
    func queueDepthMeansLoad() {
        var load = HandshakeLoad(limit: 1_000_000, now: start)
        let queueBelowAnEighth = load.record(now: start, queued: 511, queueCapacity: 4096)
        #expect(!queueBelowAnEighth)
        let queueAnEighthFull = load.record(now: start, queued: 512, queueCapacity: 4096)
        #expect(queueAnEighthFull)
    }

    @Test("a million initiations in one second cost the same per call as a hundred (constant memory)")
    func constantWork() {
        var load = HandshakeLoad(limit: 200, now: start)
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for index in 0..<1_000_000 { _ = load.record(now: start.addingTimeInterval(Double(index) / 1_000_000)) }
        }
        // The old list of timestamps rescanned itself per call: 10^12 steps here. The window
        // does a million; even a debug build finishes in well under the bound.
        #expect(elapsed < .seconds(20), "\(elapsed)")
        #expect(abs(load.estimatedRate(now: start.addingTimeInterval(0.999999)) - 1_000_000) < 2)
    }

    @Test("one source: a burst of five, then twenty a second; another source is not affected")
    func perSourceBuckets() throws {
        var limiter = InitiationRateLimiter(now: start)
        let flooder = try #require(InitiationRateLimiter.Source(address: [203, 0, 113, 9]))
        let neighbour = try #require(InitiationRateLimiter.Source(address: [203, 0, 113, 10]))
        let allowedAtOnce = (0..<50).filter { _ in limiter.allow(flooder, now: start) }.count
        #expect(allowedAtOnce == 5)
        let neighbourAllowed = limiter.allow(neighbour, now: start)
        #expect(neighbourAllowed)
        // Over the next ten seconds, one attempt every millisecond: 20 per second get through.
        var allowed = 0
        for millisecond in 1...10_000 where limiter.allow(flooder, now: start.addingTimeInterval(Double(millisecond) / 1000)) {
            allowed += 1
        }
        #expect((199...201).contains(allowed), "\(allowed)")
    }

    @Test("an IPv6 /64 is one source, an IPv4-mapped address is its IPv4 address")
    func sourceKeys() throws {
        let a = try #require(InitiationRateLimiter.Source(address: [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2] + [1, 2, 3, 4, 5, 6, 7, 8]))
        let b = try #require(InitiationRateLimiter.Source(address: [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2] + [9, 9, 9, 9, 9, 9, 9, 9]))
        let c = try #require(InitiationRateLimiter.Source(address: [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 3] + [1, 2, 3, 4, 5, 6, 7, 8]))
        #expect(a == b)
        #expect(a != c)
        let mapped = try #require(InitiationRateLimiter.Source(address: [UInt8](repeating: 0, count: 10) + [0xff, 0xff, 192, 0, 2, 1]))
        #expect(mapped == InitiationRateLimiter.Source(address: [192, 0, 2, 1]))
        #expect(InitiationRateLimiter.Source(address: [1, 2, 3]) == nil)
    }

    @Test("the table is bounded: a source that does not fit is refused, idle ones are forgotten")
    func boundedTable() throws {
        var limiter = InitiationRateLimiter(capacity: 100, now: start)
        for index in 0..<100 {
            let source = try #require(InitiationRateLimiter.Source(address: [10, 0, 0, UInt8(index)]))
            let admitted = limiter.allow(source, now: start)
            #expect(admitted)
        }
        let late = try #require(InitiationRateLimiter.Source(address: [10, 0, 1, 0]))
        let lateAllowed = limiter.allow(late, now: start)
        #expect(!lateAllowed)
        #expect(limiter.trackedSources == 100)
        // A second later every bucket has refilled (5 tokens at 20/s take 0.25 s) and is swept.
        let lateAllowedAfterSweep = limiter.allow(late, now: start.addingTimeInterval(1))
        #expect(lateAllowedAfterSweep)
        #expect(limiter.trackedSources == 1)
    }
}
