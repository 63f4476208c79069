import HomomorphicEncryption
import Synchronization

/// Evaluation keys uploaded by clients, by (pseudonymous user identifier, key-config hash),
/// least recently used dropped first beyond `capacity`. Identifiers are opaque to the server.
public final class EvaluationKeyStore: Sendable {
    struct Entry {
        var key: EvaluationKey
        var timestamp: UInt64
        var lastUse: UInt64
    }

    struct State {
        var entries: [String: Entry] = [:]
        var clock: UInt64 = 0
    }

    public let capacity: Int
    private let state = Mutex(State())

    public init(capacity: Int) { self.capacity = max(1, capacity) }

    static func slot(user: String, configHash: [UInt8]) -> String {
        user + "|" + configHash.map { String(format: "%02x", $0) }.joined()
    }

    public func store(_ key: EvaluationKey, user: String, configHash: [UInt8], timestamp: UInt64) {
        state.withLock { state in
            state.clock += 1
            state.entries[Self.slot(user: user, configHash: configHash)] = Entry(key: key, timestamp: timestamp, lastUse: state.clock)
            if state.entries.count > capacity, let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
                state.entries.removeValue(forKey: oldest)
            }
        }
    }

    public func key(user: String, configHash: [UInt8]) -> EvaluationKey? {
        state.withLock { state in
            let slot = Self.slot(user: user, configHash: configHash)
            guard var entry = state.entries[slot] else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[slot] = entry
            return entry.key
        }
    }

    /// When the stored key was made (the client's timestamp), 0 when none is stored.
    public func timestamp(user: String, configHash: [UInt8]) -> UInt64 {
        state.withLock { $0.entries[Self.slot(user: user, configHash: configHash)]?.timestamp ?? 0 }
    }

    public var count: Int { state.withLock { $0.entries.count } }
}

import Foundation
