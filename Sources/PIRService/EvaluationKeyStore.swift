import HomomorphicEncryption
import Synchronization

/// Evaluation keys uploaded by clients, by (pseudonymous user identifier, key-config hash).
/// Identifiers are opaque to the server and anyone can make new ones, so uploads alone must not
/// be able to push out the keys of clients that are using the service. Two parts (segmented LRU):
/// - a new key is *probationary*; when the store is full, the least recently used probationary
///   key goes first;
/// - a key that has answered a query (`confirmUse`) is *protected*, in a part that holds at most
///   three quarters of `capacity`; past that, its least recently used key goes back to probation.
/// A flood of uploads under fresh identifiers therefore only churns the probationary quarter.
/// The store is bounded twice: by `capacity` keys and by `byteBudget` bytes of key material
/// (`EvaluationKey.byteCount`; a key of the URL filter's parameters is about 1.4 MB), whichever
/// is reached first; the eviction order is the same for both.
public final class EvaluationKeyStore: Sendable {
    struct Entry {
        var key: EvaluationKey
        var bytes: Int
        var timestamp: UInt64
        var lastUse: UInt64
        var isProtected: Bool
    }

    struct State {
        var entries: [String: Entry] = [:]
        var protectedCount = 0
        var bytes = 0
        var clock: UInt64 = 0

        mutating func tick() -> UInt64 {
            clock += 1
            return clock
        }

        /// The least recently used entry of one part.
        func leastRecentlyUsed(protected: Bool) -> String? {
            entries.lazy.filter { $0.value.isProtected == protected }.min { $0.value.lastUse < $1.value.lastUse }?.key
        }
    }

    public let capacity: Int
    /// The most bytes of key material held (at least one key is always kept).
    public let byteBudget: Int
    /// The most keys the protected part holds.
    public var protectedCapacity: Int { max(1, capacity * 3 / 4) }
    private let state = Mutex(State())

    /// The default byte budget: 256 MiB.
    public static let defaultByteBudget = 256 << 20

    public init(capacity: Int, byteBudget: Int = EvaluationKeyStore.defaultByteBudget) {
        self.capacity = max(1, capacity)
        self.byteBudget = max(1, byteBudget)
    }

    static func slot(user: String, configHash: [UInt8]) -> String {
        user + "|" + configHash.map { String(format: "%02x", $0) }.joined()
    }

    /// Stores (or replaces) a user's key. A replaced protected key stays protected.
    public func store(_ key: EvaluationKey, user: String, configHash: [UInt8], timestamp: UInt64) {
        state.withLock { state in
            let slot = Self.slot(user: user, configHash: configHash)
            let isProtected = state.entries[slot]?.isProtected ?? false
            let bytes = key.byteCount
            state.bytes += bytes - (state.entries[slot]?.bytes ?? 0)
            state.entries[slot] = Entry(key: key, bytes: bytes, timestamp: timestamp, lastUse: state.tick(), isProtected: isProtected)
            while state.entries.count > capacity || (state.bytes > byteBudget && state.entries.count > 1) {
                // The key just stored is the most recently used of all: it goes last.
                guard let victim = state.leastRecentlyUsed(protected: false) ?? state.leastRecentlyUsed(protected: true),
                      let removed = state.entries.removeValue(forKey: victim) else { break }
                state.bytes -= removed.bytes
                if removed.isProtected { state.protectedCount -= 1 }
            }
        }
    }

    /// The user's key, marked as recently used.
    public func key(user: String, configHash: [UInt8]) -> EvaluationKey? {
        state.withLock { state in
            let slot = Self.slot(user: user, configHash: configHash)
            guard var entry = state.entries[slot] else { return nil }
            entry.lastUse = state.tick()
            state.entries[slot] = entry
            return entry.key
        }
    }

    /// Records that the user's key answered a query: it becomes protected.
    public func confirmUse(user: String, configHash: [UInt8]) {
        state.withLock { state in
            let slot = Self.slot(user: user, configHash: configHash)
            guard var entry = state.entries[slot] else { return }
            entry.lastUse = state.tick()
            if !entry.isProtected {
                entry.isProtected = true
                state.protectedCount += 1
            }
            state.entries[slot] = entry
            if state.protectedCount > protectedCapacity, let demoted = state.leastRecentlyUsed(protected: true) {
                state.entries[demoted]?.isProtected = false
                state.protectedCount -= 1
            }
        }
    }

    /// Whether the user's key is in the protected part.
    public func isProtected(user: String, configHash: [UInt8]) -> Bool {
        state.withLock { $0.entries[Self.slot(user: user, configHash: configHash)]?.isProtected ?? false }
    }

    /// When the stored key was made (the client's timestamp), 0 when none is stored.
    public func timestamp(user: String, configHash: [UInt8]) -> UInt64 {
        state.withLock { $0.entries[Self.slot(user: user, configHash: configHash)]?.timestamp ?? 0 }
    }

    public var count: Int { state.withLock { $0.entries.count } }
    /// The bytes of key material held.
    public var byteCount: Int { state.withLock { $0.bytes } }
}
