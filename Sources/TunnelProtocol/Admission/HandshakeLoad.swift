import Foundation

/// Whether the responder is under load, so that it asks for cookies (mac2) before doing any
/// Diffie-Hellman. Two signals, either of which turns it on for the next second:
/// - the rate of initiations that passed mac1, estimated with a sliding window of two one-second
///   buckets (constant time and memory whatever the rate), above `limit` per second;
/// - the handshake queue at least an eighth full (WireGuard's signal: work is piling up).
///
/// Pure: the caller passes the time, so tests drive it with a fake clock.
public struct HandshakeLoad: Sendable {
    /// Initiations per second accepted before cookies are required.
    public let limit: Int
    private var bucketStart: Date
    private var currentCount = 0
    private var previousCount = 0
    private var underLoadUntil = Date.distantPast

    /// How long one signal keeps the responder under load.
    public static let holdTime: TimeInterval = 1

    public init(limit: Int, now: Date = Date()) {
        self.limit = max(1, limit)
        bucketStart = now
    }

    /// Counts one initiation at `now` and says whether cookies are required for it.
    /// `queued` and `queueCapacity` describe the handshake queue it came from.
    public mutating func record(now: Date, queued: Int = 0, queueCapacity: Int = .max) -> Bool {
        let elapsed = now.timeIntervalSince(bucketStart)
        if elapsed >= 2 || elapsed < 0 {
            previousCount = 0
            currentCount = 0
            bucketStart = now
        } else if elapsed >= 1 {
            previousCount = currentCount
            currentCount = 0
            bucketStart = bucketStart.addingTimeInterval(1)
        }
        currentCount += 1
        if estimatedRate(now: now) > Double(limit) || queued >= queueCapacity / 8 {
            underLoadUntil = now.addingTimeInterval(Self.holdTime)
        }
        return now < underLoadUntil
    }

    /// Initiations in the last second: this bucket plus the part of the previous one that the
    /// window still covers.
    public func estimatedRate(now: Date) -> Double {
        let elapsed = max(now.timeIntervalSince(bucketStart), 0)
        switch elapsed {
        case ..<1: return Double(previousCount) * (1 - elapsed) + Double(currentCount)
        case ..<2: return Double(currentCount) * (2 - elapsed)  // this bucket is now the previous one
        default: return 0
        }
    }
}
