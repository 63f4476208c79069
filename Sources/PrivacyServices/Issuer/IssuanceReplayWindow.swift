import Crypto
import Foundation
import Synchronization

/// Blinded messages the issuer signed recently (SHA-256 digests), so that a relay or anyone on
/// the path replaying a client's encapsulated issuance request gets nothing and charges nothing
/// to that client's credential. A client never sends the same blinded message twice: each is
/// the token input under a fresh random blind (RFC 9474 §4.2), so a repeat is a replay.
/// Digests are kept for `window` seconds, at most `capacity` of them (the oldest go first).
public final class IssuanceReplayWindow: Sendable {
    public let window: Double
    public let capacity: Int
    private struct State {
        var seen: Set<Data> = []
        var order: [(at: Double, digest: Data)] = []
        var head = 0
    }
    private let state = Mutex(State())

    public init(window: Double = 3600, capacity: Int = 1_000_000) {
        self.window = window
        self.capacity = capacity
    }

    /// The digests the window keeps of `messages` (computed once per request, then passed to
    /// `containsAny` and `record`).
    public static func digests(_ messages: [[UInt8]]) -> [Data] { messages.map(digest) }

    /// Whether any of `digests` was signed within the window (or one repeats another).
    public func containsAny(_ digests: [Data], now: Double = Date().timeIntervalSince1970) -> Bool {
        state.withLock { state in
            expire(&state, now: now)
            return Set(digests).count != digests.count || digests.contains { state.seen.contains($0) }
        }
    }

    /// Records `digests` as signed; `false` (recording nothing) when one of them already was.
    public func record(_ digests: [Data], now: Double = Date().timeIntervalSince1970) -> Bool {
        state.withLock { state in
            expire(&state, now: now)
            guard !digests.contains(where: { state.seen.contains($0) }), Set(digests).count == digests.count else { return false }
            for digest in digests {
                state.seen.insert(digest)
                state.order.append((now, digest))
            }
            while state.seen.count > capacity, state.head < state.order.count {
                state.seen.remove(state.order[state.head].digest)
                state.head += 1
            }
            return true
        }
    }

    /// Digests held now.
    public var count: Int { state.withLock { $0.seen.count } }

    private func expire(_ state: inout State, now: Double) {
        while state.head < state.order.count, state.order[state.head].at + window <= now {
            state.seen.remove(state.order[state.head].digest)
            state.head += 1
        }
        // Compact once the consumed prefix dominates, so the array does not grow for ever.
        if state.head > 1024, state.head * 2 > state.order.count {
            state.order.removeFirst(state.head)
            state.head = 0
        }
    }

    static func digest(_ message: [UInt8]) -> Data { Data(SHA256.hash(data: message)) }
}
