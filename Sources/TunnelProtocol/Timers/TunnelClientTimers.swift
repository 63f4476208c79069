import Foundation

/// When a tunnel client starts a handshake, sends a keepalive, and tells the system it is
/// reconnecting: a pure state machine over the times things happened, with no clock and no I/O
/// of its own. Its executor (the client's timer thread) calls `tick` with the time and the
/// current session's health, and performs the actions; the data paths report what they sent and
/// received. Tests drive it with any times they like.
///
/// The rules (WireGuard's timers, whitepaper §6, reduced to a client):
/// - a handshake when there is no session, the session needs a rekey or has expired, or the
///   server has gone silent — at most one initiation per `rekeyTimeout` (a cookie reply allows
///   the next at once);
/// - silent: `keepaliveTimeout + rekeyTimeout` have passed since the first data sent after the
///   last thing received, and nothing was received since (the server answers data within
///   `keepaliveTimeout`, with its own data or a keepalive); that begins reasserting, which the
///   next completed handshake ends. The wait is counted from that data, never from the last
///   answer, so the first packet after a long idle spell is not taken for silence. A keepalive
///   is not data: it expects no answer (§6.5), so an idle tunnel is not a silent one;
/// - a passive keepalive when data was received but nothing sent for `keepaliveTimeout` (and the
///   data is not older than twice that: a quiet tunnel stays quiet).
public struct TunnelClientTimers: Sendable, Hashable {
    /// What the current transport session needs.
    public enum SessionHealth: Sendable, Hashable {
        case none, fresh, needsRekey, expired
    }

    public enum Action: Sendable, Hashable {
        /// Send a new handshake initiation (retry or rekey).
        case sendInitiation
        /// Send an empty transport message.
        case sendKeepalive
        /// The server went silent: tell the system the tunnel is reconnecting.
        case beginReasserting
    }

    public let timing: TunnelTiming
    /// The last transport message sent: data or keepalive.
    public private(set) var lastSent = Date.distantPast
    /// The last data sent.
    public private(set) var lastDataSent = Date.distantPast
    /// The first data sent since the last thing received: what the server's answer is awaited
    /// for (nil when nothing is owed).
    public private(set) var unansweredSince: Date?
    public private(set) var lastReceived = Date.distantPast
    /// When the initiation that is still unanswered was sent.
    public private(set) var initiationSent = Date.distantPast
    public private(set) var isReasserting = false

    public init(timing: TunnelTiming) {
        self.timing = timing
    }

    /// Whether the server has gone silent at `now`.
    public func isSilent(at now: Date) -> Bool {
        guard let unansweredSince else { return false }
        return now.timeIntervalSince(unansweredSince) > timing.keepaliveTimeout + timing.rekeyTimeout
    }

    /// What to do at `now`. An initiation or keepalive it asks for counts as sent now.
    public mutating func tick(now: Date, session: SessionHealth) -> [Action] {
        var actions: [Action] = []
        let silent = isSilent(at: now)
        if session != .fresh || silent, now.timeIntervalSince(initiationSent) >= timing.rekeyTimeout {
            if silent && !isReasserting {
                isReasserting = true
                actions.append(.beginReasserting)
            }
            initiationSent = now
            actions.append(.sendInitiation)
        }
        if session != .none, lastReceived > lastSent,
           now.timeIntervalSince(lastSent) >= timing.keepaliveTimeout, now.timeIntervalSince(lastReceived) < timing.keepaliveTimeout * 2 {
            lastSent = now
            actions.append(.sendKeepalive)
        }
        return actions
    }

    /// A data path sent data.
    public mutating func sent(at now: Date) {
        lastSent = max(lastSent, now)
        lastDataSent = max(lastDataSent, now)
        if unansweredSince == nil, now >= lastReceived { unansweredSince = now }
    }

    /// A keepalive went out other than one `tick` asked for (after a roam).
    public mutating func keepaliveSent(at now: Date) {
        lastSent = max(lastSent, now)
    }

    /// A data path accepted a transport message from the server.
    public mutating func received(at now: Date) {
        lastReceived = max(lastReceived, now)
        if let since = unansweredSince, since <= now { unansweredSince = nil }
    }

    /// A handshake completed. Returns whether that ended reasserting.
    public mutating func handshakeCompleted(at now: Date) -> Bool {
        received(at: now)
        initiationSent = .distantPast
        defer { isReasserting = false }
        return isReasserting
    }

    /// A cookie reply arrived for the pending initiation: the next one may go at once.
    public mutating func cookieReceived() {
        initiationSent = .distantPast
    }
}
