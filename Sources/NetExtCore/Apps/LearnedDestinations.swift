/// The addresses DNS answered for a domain-limited app rule's names (``AppRule/matchDomains``):
/// where the rule's apps may go through the tunnel. Each lives for its record's time to live, at
/// least a minute (programs keep answers a little past it) and at most a day; at most
/// ``capacity`` are kept, the ones expiring soonest leaving first. Pure: time is passed in.
public struct LearnedDestinations: Sendable, Hashable {
    /// One address and how long it has left, as the steering table writes it.
    public struct Destination: Sendable, Hashable {
        /// 4 or 16 bytes.
        public var address: [UInt8]
        /// Whole seconds left, at least 1.
        public var secondsLeft: Int
        public init(address: [UInt8], secondsLeft: Int) {
            self.address = address
            self.secondsLeft = secondsLeft
        }
    }

    public static let capacity = 4_096
    public static let minimumLifetime: Duration = .seconds(60)
    public static let maximumLifetime: Duration = .seconds(86_400)

    private var expiries: [[UInt8]: ContinuousClock.Instant] = [:]

    public init() {}

    public var count: Int { expiries.count }

    /// Records answered addresses (4 or 16 bytes each, with their time to live). Returns whether
    /// the table must change: an address is new, or its lifetime grew by more than half (an
    /// answer repeated within its lifetime changes nothing).
    public mutating func learn(_ answers: [(address: [UInt8], ttl: UInt32)], now: ContinuousClock.Instant) -> Bool {
        var changed = false
        for answer in answers where answer.address.count == 4 || answer.address.count == 16 {
            let lifetime = min(max(Duration.seconds(Int64(answer.ttl)), Self.minimumLifetime), Self.maximumLifetime)
            let expiry = now + lifetime
            // Kept as the table has it: a lifetime grown only here would outlive the kernel's.
            if let known = expiries[answer.address], known - now >= lifetime / 2 { continue }
            expiries[answer.address] = expiry
            changed = true
        }
        if expiries.count > Self.capacity {
            let leaving = expiries.sorted { $0.value < $1.value }.prefix(expiries.count - Self.capacity)
            for (address, _) in leaving { expiries[address] = nil }
        }
        return changed
    }

    /// Forgets the addresses whose lifetime is over.
    public mutating func expire(now: ContinuousClock.Instant) {
        expiries = expiries.filter { $0.value > now }
    }

    /// The living addresses with their seconds left, in address order.
    public func alive(now: ContinuousClock.Instant) -> [Destination] {
        expiries.compactMap { address, expiry -> Destination? in
            guard expiry > now else { return nil }
            let left = (expiry - now).components
            return Destination(address: address, secondsLeft: max(1, Int(left.seconds) + (left.attoseconds > 0 ? 1 : 0)))
        }.sorted { $0.address.lexicographicallyPrecedes($1.address) }
    }
}
