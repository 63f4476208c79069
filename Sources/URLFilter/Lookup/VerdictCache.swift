import Foundation

/// Verdicts by normalized URL, at most `capacity` of them (the oldest entry goes first) and
/// none older than `lifetime` seconds, so a changed block list is seen within that time.
final class VerdictCache: @unchecked Sendable {
    let capacity: Int
    let lifetime: Double
    private var entries: [String: (verdict: URLFilterVerdict, stored: Double)] = [:]
    private var order: [String] = []
    private var head = 0
    private let lock = NSLock()

    init(capacity: Int, lifetime: Double) {
        self.capacity = max(1, capacity)
        self.lifetime = lifetime
    }

    func verdict(for key: String, now: Double = Date().timeIntervalSince1970) -> URLFilterVerdict? {
        lock.lock(); defer { lock.unlock() }
        guard let entry = entries[key] else { return nil }
        guard now - entry.stored < lifetime else {
            entries[key] = nil
            return nil
        }
        return entry.verdict
    }

    func store(_ verdict: URLFilterVerdict, for key: String, now: Double = Date().timeIntervalSince1970) {
        lock.lock(); defer { lock.unlock() }
        if entries.updateValue((verdict, now), forKey: key) == nil { order.append(key) }
        while entries.count > capacity, head < order.count {
            entries[order[head]] = nil
            head += 1
        }
        // Compact the insertion log once much of it is stale (evicted or expired and re-stored).
        if head > capacity || order.count > 2 * capacity {
            var seen = Set<String>()
            var kept: [String] = []
            for key in order[head...].reversed() where entries[key] != nil && seen.insert(key).inserted { kept.append(key) }
            order = kept.reversed()
            head = 0
        }
    }

    func removeAll() {
        lock.lock(); defer { lock.unlock() }
        entries = [:]
        order = []
        head = 0
    }

    var count: Int {
        lock.lock(); defer { lock.unlock() }
        return entries.count
    }
}
