import NetExtCore

/// The host names addresses were last looked up as (from DNS answers netextd saw), so a flow
/// with no TLS server name or HTTP Host (UDP, ICMP, other TCP protocols) is still judged by
/// name. The newest answer for an address wins; entries live for their record's time to live,
/// at least a minute (programs keep answers a little past it) and at most a day. Pure: time is
/// passed in. Bounded: the oldest entries go first.
public struct DNSNameCache: Sendable {
    private struct Entry: Sendable {
        var name: String
        var expires: ContinuousClock.Instant
    }

    private var entries: [[UInt8]: Entry] = [:]
    private var order: [[UInt8]] = []
    private var orderStart = 0
    public static let capacity = 16_384
    public static let minimumLifetime: Duration = .seconds(60)
    public static let maximumLifetime: Duration = .seconds(86_400)

    public init() {}

    public var count: Int { entries.count }

    /// Records what an answer says.
    public mutating func record(_ answer: DNSAnswerAddresses, now: ContinuousClock.Instant) {
        guard let name = HostName.normalized(answer.name) else { return }
        for address in answer.addresses {
            let lifetime = min(max(Duration.seconds(Int64(address.ttl)), Self.minimumLifetime), Self.maximumLifetime)
            if entries.updateValue(Entry(name: name, expires: now + lifetime), forKey: address.bytes) == nil {
                order.append(address.bytes)
            }
        }
        while entries.count > Self.capacity, orderStart < order.count {
            entries[order[orderStart]] = nil
            orderStart += 1
        }
        if orderStart > Self.capacity {
            order.removeFirst(orderStart)
            orderStart = 0
        }
    }

    /// The name `address` was last looked up as, if that answer is still alive.
    public func name(for address: [UInt8], now: ContinuousClock.Instant) -> String? {
        guard let entry = entries[address], entry.expires > now else { return nil }
        return entry.name
    }
}
