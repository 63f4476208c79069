/// The answers of netextd's resolver, kept as long as their TTLs allow (RFC 1035 §3.2.1, RFC
/// 2181 §8) so that a name asked again is answered without a round trip: positive answers for
/// their records' smallest TTL, negative ones (NXDOMAIN, or no data) for their SOA's TTL or
/// MINIMUM, whichever is smaller (RFC 2308 §5); SERVFAIL, truncated and unparsable answers are
/// not kept. An answer given from the cache carries the asker's identifier and question (the
/// exact case it asked in: some clients check it, draft-vixie-dnsext-dns0x20) and TTLs reduced by
/// the time it has been kept. At most `capacity` answers: when full, the oldest go (a 64th of
/// the capacity at once); an expired answer goes when it is asked for.
///
/// Not thread-safe: its owner serialises access.
public struct DNSAnswerCache: Sendable {
    public struct Key: Hashable, Sendable {
        public var name: String
        public var type: UInt16
        public var questionClass: UInt16

        public init(name: String, type: UInt16, questionClass: UInt16) {
            self.name = name
            self.type = type
            self.questionClass = questionClass
        }

        /// The key of a parsed query (its name is lowercased already).
        public init(_ query: DNSQuery) {
            self.init(name: query.name, type: query.type, questionClass: query.questionClass)
        }
    }

    struct Entry: Sendable {
        var answer: [UInt8]
        var storedAt: Double
        var expiresAt: Double
        /// Where each record's TTL field is (records other than OPT), to count them down.
        var ttlOffsets: [Int]
        /// Where the OPT record is, to leave it out for askers that sent none.
        var opt: Range<Int>?
    }

    public let capacity: Int
    /// The longest an answer is kept, whatever its TTL says.
    public static let maximumTTL: UInt32 = 86_400
    private var entries: [Key: Entry] = [:]
    private var order: [Key] = []
    private var orderStart = 0
    public private(set) var hits = 0
    public private(set) var misses = 0

    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    public var count: Int { entries.count }

    /// The cache key of a query (its first question), nil when it does not parse.
    public static func key(of query: [UInt8]) -> Key? {
        guard query.count >= 12, query[4] == 0, query[5] == 1 else { return nil }
        var offset = 12
        guard let name = try? DNSQuery.readName(query, at: &offset), offset + 4 <= query.count else { return nil }
        return Key(name: name, type: UInt16(query[offset]) << 8 | UInt16(query[offset + 1]), questionClass: UInt16(query[offset + 2]) << 8 | UInt16(query[offset + 3]))
    }

    /// The kept answer to `query` at `now` (seconds), made the asker's; nil when there is none.
    public mutating func answer(to query: [UInt8], now: Double) -> [UInt8]? {
        guard let parsed = try? DNSQuery(parsing: query) else {
            misses += 1
            return nil
        }
        return answer(to: query, parsed: parsed, now: now, withoutOPT: false)
    }

    /// The kept answer to `query` (already parsed), made the asker's: its identifier and
    /// question, TTLs counted down, and without the OPT record if `withoutOPT` (an asker that
    /// sent none must get none, RFC 6891 §7).
    public mutating func answer(to query: [UInt8], parsed: DNSQuery, now: Double, withoutOPT: Bool) -> [UInt8]? {
        let key = Key(parsed)
        guard let entry = entries[key] else {
            misses += 1
            return nil
        }
        guard now < entry.expiresAt else {
            entries[key] = nil
            misses += 1
            return nil
        }
        hits += 1
        var answer = entry.answer
        answer[0] = query[0]
        answer[1] = query[1]
        // The question in the asker's own case (same name, so the same length and offsets).
        if parsed.questionEnd <= answer.count {
            answer.replaceSubrange(12..<parsed.questionEnd, with: query[12..<parsed.questionEnd])
        }
        let elapsed = UInt32(max(0, now - entry.storedAt))
        if elapsed > 0 {
            for offset in entry.ttlOffsets {
                let ttl = UInt32(answer[offset]) << 24 | UInt32(answer[offset + 1]) << 16 | UInt32(answer[offset + 2]) << 8 | UInt32(answer[offset + 3])
                let left = ttl > elapsed ? ttl - elapsed : 0
                answer[offset] = UInt8(left >> 24)
                answer[offset + 1] = UInt8((left >> 16) & 0xff)
                answer[offset + 2] = UInt8((left >> 8) & 0xff)
                answer[offset + 3] = UInt8(left & 0xff)
            }
        }
        if withoutOPT, let opt = entry.opt {
            answer.removeSubrange(opt)
            let count = (Int(answer[10]) << 8 | Int(answer[11])) - 1
            answer[10] = UInt8(count >> 8)
            answer[11] = UInt8(count & 0xff)
        }
        return answer
    }

    /// Keeps `answer` (the response to `query`, already checked against it) if it may be kept.
    public mutating func store(_ answer: [UInt8], for query: [UInt8], now: Double) {
        guard let key = Self.key(of: query) else { return }
        store(answer, key: key, now: now)
    }

    /// Keeps `answer` under `key` (its query's, ``Key/init(_:)``) if it may be kept.
    public mutating func store(_ answer: [UInt8], key: Key, now: Double) {
        guard let lifetime = Self.lifetime(of: answer), lifetime.seconds > 0 else { return }
        let entry = Entry(answer: answer, storedAt: now, expiresAt: now + Double(lifetime.seconds), ttlOffsets: lifetime.ttlOffsets, opt: lifetime.opt)
        guard entries.updateValue(entry, forKey: key) == nil else { return }
        order.append(key)
        if entries.count > capacity { evict(now: now) }
        compactOrder()
    }

    /// Forgets everything (the servers changed).
    public mutating func removeAll() {
        entries.removeAll()
        order.removeAll()
        orderStart = 0
    }

    /// How long `answer` may be kept and where its TTLs are; nil when it may not be kept.
    static func lifetime(of answer: [UInt8]) -> (seconds: UInt32, ttlOffsets: [Int], opt: Range<Int>?)? {
        guard answer.count >= 12, answer[2] & 0x80 != 0, answer[2] & 0x02 == 0 else { return nil }  // a response, not truncated
        let rcode = answer[3] & 0x0f
        guard rcode == 0 || rcode == 3 else { return nil }  // NOERROR or NXDOMAIN
        func count(_ index: Int) -> Int { Int(answer[index]) << 8 | Int(answer[index + 1]) }
        let answers = count(6), authorities = count(8), additionals = count(10)
        var offset = 12
        do {
            for _ in 0..<count(4) {
                _ = try DNSQuery.skipName(answer, at: &offset)
                offset += 4
            }
            var smallest = maximumTTL
            var offsets: [Int] = []
            var negativeTTL: UInt32?
            var opt: Range<Int>?
            for index in 0..<(answers + authorities + additionals) {
                let recordStart = offset
                _ = try DNSQuery.skipName(answer, at: &offset)
                guard offset + 10 <= answer.count else { return nil }
                let type = UInt16(answer[offset]) << 8 | UInt16(answer[offset + 1])
                let ttl = UInt32(answer[offset + 4]) << 24 | UInt32(answer[offset + 5]) << 16 | UInt32(answer[offset + 6]) << 8 | UInt32(answer[offset + 7])
                let length = Int(answer[offset + 8]) << 8 | Int(answer[offset + 9])
                let rdata = offset + 10
                guard rdata + length <= answer.count else { return nil }
                if type != DNSMessageEditing.optType {
                    offsets.append(offset + 4)
                    if index < answers { smallest = min(smallest, ttl) }
                    // RFC 2308 §5: a negative answer lives min(SOA TTL, SOA MINIMUM).
                    if type == 6, index >= answers, index < answers + authorities, length >= 20 {
                        let minimumAt = rdata + length - 4
                        let minimum = UInt32(answer[minimumAt]) << 24 | UInt32(answer[minimumAt + 1]) << 16 | UInt32(answer[minimumAt + 2]) << 8 | UInt32(answer[minimumAt + 3])
                        negativeTTL = min(ttl, minimum)
                    }
                }
                if type == DNSMessageEditing.optType, index >= answers + authorities, answer[recordStart] == 0 { opt = recordStart..<(rdata + length) }
                offset = rdata + length
            }
            guard offset == answer.count else { return nil }
            if rcode == 3 || answers == 0 {
                guard let negativeTTL else { return nil }
                return (min(negativeTTL, maximumTTL), offsets, opt)
            }
            return (smallest, offsets, opt)
        } catch {
            return nil
        }
    }

    /// Makes room: the oldest answers go, 1/64 of the capacity at once so that a full cache
    /// does not pay this on every store (expired answers go when they are asked for).
    private mutating func evict(now: Double) {
        let batch = max(1, capacity / 64)
        var removed = 0
        while removed < batch, orderStart < order.count {
            let oldest = order[orderStart]
            orderStart += 1
            if entries.removeValue(forKey: oldest) != nil { removed += 1 }
        }
    }

    /// Drops the keys already evicted from the front of the order (a move, no look-ups), and
    /// the keys of answers gone otherwise (expired when asked for) once they are as many as
    /// the answers kept.
    private mutating func compactOrder() {
        if orderStart > 4096 {
            order.removeFirst(orderStart)
            orderStart = 0
        }
        guard order.count - orderStart > 2 * max(entries.count, 64) else { return }
        var seen = Set<Key>(minimumCapacity: entries.count)
        order = order[orderStart...].filter { entries[$0] != nil && seen.insert($0).inserted }
        orderStart = 0
    }
}
