import Foundation

/// The initiation's replay guard: a TAI64N-style timestamp (8 bytes of seconds, 4 of nanoseconds,
/// big-endian), encrypted in the initiation. A responder accepts an initiation from a peer only if
/// its timestamp is greater than the last accepted one, so a captured initiation cannot be replayed.
public struct HandshakeTimestamp: Sendable, Hashable, Comparable {
    public var seconds: UInt64
    public var nanoseconds: UInt32

    public init(seconds: UInt64, nanoseconds: UInt32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// TAI64 labels start at 2^62; the offset keeps the encoding monotonic and recognisable.
    public init(date: Date) {
        let interval = max(0, date.timeIntervalSince1970)
        seconds = (1 << 62) + UInt64(interval)
        nanoseconds = UInt32((interval - interval.rounded(.down)) * 1_000_000_000)
    }

    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(seconds)
        bytes.appendBigEndian(nanoseconds)
        return bytes
    }

    init(bytes: [UInt8]) {
        seconds = bytes.readBigEndianUInt64(at: 0)
        nanoseconds = bytes.readBigEndianUInt32(at: 8)
    }

    public static func < (lhs: HandshakeTimestamp, rhs: HandshakeTimestamp) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }
}
