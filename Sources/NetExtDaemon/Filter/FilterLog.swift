import NetExtCore

/// The most recent verdicts, bounded.
struct FilterLog: Sendable {
    static let capacity = 2_000
    private var entries: [FilterLogEntry] = []
    private var start = 0

    mutating func append(_ entry: FilterLogEntry) {
        if entries.count < Self.capacity {
            entries.append(entry)
        } else {
            entries[start] = entry
            start = (start + 1) % Self.capacity
        }
    }

    /// The last `limit` entries, oldest first.
    func latest(_ limit: Int) -> [FilterLogEntry] {
        let ordered = Array(entries[start...] + entries[..<start])
        return Array(ordered.suffix(max(0, limit)))
    }
}
