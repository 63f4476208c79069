import Foundation
import Synchronization

/// Token buckets per credential: `burst` tokens at most, refilled at `perHour`. The issuer
/// spends one per token signed.
public final class IssuanceRateLimiter: Sendable {
    public let perHour: Double
    public let burst: Double
    private let buckets = Mutex([Int: (tokens: Double, updated: Double)]())

    public init(perHour: Double, burst: Double) {
        self.perHour = perHour
        self.burst = burst
    }

    /// Takes `count` tokens for `credential` at `now` (seconds); `nil` when allowed, else the
    /// seconds until enough are back.
    public func take(_ count: Int, credential: Int, now: Double = Date().timeIntervalSince1970) -> Int? {
        buckets.withLock { buckets in
            var bucket = buckets[credential] ?? (burst, now)
            bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * perHour / 3600)
            bucket.updated = now
            defer { buckets[credential] = bucket }
            if bucket.tokens >= Double(count) {
                bucket.tokens -= Double(count)
                return nil
            }
            guard perHour > 0, Double(count) <= burst else { return Int.max }
            return Int(((Double(count) - bucket.tokens) * 3600 / perHour).rounded(.up))
        }
    }
}
