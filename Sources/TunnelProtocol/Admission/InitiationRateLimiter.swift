import Foundation
import NetExtCore

/// Per-source token buckets for initiations that carry a valid cookie (mac2) while the responder
/// is under load: a cookie proves the sender receives at its address, not that it is polite, so
/// one reused cookie must not buy unlimited Diffie-Hellman. After WireGuard's rate limiter:
/// `perSecond` initiations per second with a burst of `burst`, keyed by the IPv4 address or the
/// IPv6 /64 (an IPv4-mapped IPv6 address counts as its IPv4 address), at most `capacity` sources
/// tracked — a source that does not fit is refused, so the table cannot be grown without bound.
///
/// Pure: the caller passes the time. Idle buckets are swept at most once a second, in time
/// proportional to the table (bounded by `capacity`).
public struct InitiationRateLimiter: Sendable {
    /// A source as the limiter sees it (IPv4 address or IPv6 /64).
    public typealias Source = SourceKey

    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    public let perSecond: Double
    public let burst: Double
    public let capacity: Int
    private var buckets: [Source: Bucket] = [:]
    private var lastSweep: Date

    public init(perSecond: Double = 20, burst: Double = 5, capacity: Int = 8192, now: Date = Date()) {
        self.perSecond = perSecond
        self.burst = max(1, burst)
        self.capacity = max(1, capacity)
        lastSweep = now
    }

    /// Whether an initiation from `source` at `now` may go on to the handshake (and, if so, takes
    /// its token).
    public mutating func allow(_ source: Source, now: Date) -> Bool {
        sweep(now: now)
        if var bucket = buckets[source] {
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(burst, bucket.tokens + elapsed * perSecond)
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[source] = bucket
            return allowed
        }
        guard buckets.count < capacity else { return false }
        buckets[source] = Bucket(tokens: burst - 1, updated: now)
        return true
    }

    /// Sources tracked now.
    public var trackedSources: Int { buckets.count }

    /// Forgets buckets that have refilled completely: they behave exactly like new ones.
    private mutating func sweep(now: Date) {
        guard now.timeIntervalSince(lastSweep) >= 1 else { return }
        lastSweep = now
        let refill = burst / perSecond
        buckets = buckets.filter { now.timeIntervalSince($0.value.updated) < refill }
    }
}
