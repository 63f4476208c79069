import Foundation

/// When keys are renewed and when they stop being accepted (after WireGuard's constants, §6.1 of
/// its paper). Tests shorten them; production uses `.standard`.
public struct TunnelTiming: Sendable, Hashable {
    /// The initiator starts a new handshake when its session is this old...
    public var rekeyAfterTime: TimeInterval
    /// ...and nobody uses a session older than this.
    public var rejectAfterTime: TimeInterval
    /// A new handshake is started after this many messages were sent with a session...
    public var rekeyAfterMessages: UInt64
    /// ...and a session sends no more than this many.
    public var rejectAfterMessages: UInt64
    /// An unanswered initiation is retried after this long.
    public var rekeyTimeout: TimeInterval
    /// A peer that received data but sent nothing for this long sends a keepalive.
    public var keepaliveTimeout: TimeInterval
    /// Give up retrying a handshake after this long.
    public var rekeyAttemptTime: TimeInterval

    public init(rekeyAfterTime: TimeInterval, rejectAfterTime: TimeInterval, rekeyAfterMessages: UInt64, rejectAfterMessages: UInt64, rekeyTimeout: TimeInterval, keepaliveTimeout: TimeInterval, rekeyAttemptTime: TimeInterval) {
        self.rekeyAfterTime = rekeyAfterTime
        self.rejectAfterTime = rejectAfterTime
        self.rekeyAfterMessages = rekeyAfterMessages
        self.rejectAfterMessages = rejectAfterMessages
        self.rekeyTimeout = rekeyTimeout
        self.keepaliveTimeout = keepaliveTimeout
        self.rekeyAttemptTime = rekeyAttemptTime
    }

    public static let standard = TunnelTiming(
        rekeyAfterTime: 120, rejectAfterTime: 180,
        rekeyAfterMessages: 1 << 60, rejectAfterMessages: UInt64.max - (1 << 13),
        rekeyTimeout: 5, keepaliveTimeout: 10, rekeyAttemptTime: 90)
}
