/// When keys are created and retired, shared by the issuer's and the gateway's key rings: a
/// key serves for `lifetime` seconds from its not-before; its successor is created `overlap`
/// seconds before that (so it can be published ahead of use), and the key retires `overlap`
/// seconds after the successor takes over. A pure function of the current not-befores.
public struct KeyRotationSchedule: Sendable, Equatable {
    public let lifetime: UInt64
    public let overlap: UInt64

    public init(lifetime: UInt64, overlap: UInt64) throws(PrivacyServiceError) {
        guard lifetime >= 60 else { throw .invalidSetting(name: "key lifetime", reason: "\(lifetime) s; at least 60") }
        guard overlap < lifetime else { throw .invalidSetting(name: "key overlap", reason: "\(overlap) s must be shorter than the lifetime (\(lifetime) s)") }
        self.lifetime = lifetime
        self.overlap = overlap
    }

    /// For keys with these not-befores (ascending): the not-befores of keys to create, and how
    /// many of the oldest to retire.
    public func plan(notBefores: [UInt64], now: UInt64) -> (create: [UInt64], retire: Int) {
        var all = notBefores
        var create: [UInt64] = []
        if all.isEmpty {
            all.append(now)
            create.append(now)
        }
        while let newest = all.last, newest + lifetime <= now + overlap {
            let next = max(newest + lifetime, now)
            all.append(next)
            create.append(next)
        }
        var retire = 0
        while all.count - retire > 1, all[retire + 1] + overlap <= now { retire += 1 }
        return (create, min(retire, notBefores.count + create.count - 1))
    }

    /// A key ring's keys (oldest first) after rotating at `now`: `make` creates (and stores) each
    /// key the plan calls for, given the keys so far; `retire` removes each retired key's file.
    /// Shared by the issuer's, the Oblivious HTTP gateway's and the Oblivious DoH target's rings.
    func rotated<Entry>(
        _ keys: [Entry], notBefore: (Entry) -> UInt64, now: UInt64,
        make: (_ notBefore: UInt64, _ current: [Entry]) throws(PrivacyServiceError) -> Entry, retire: (Entry) -> Void
    ) throws(PrivacyServiceError) -> (keys: [Entry], changed: Bool) {
        var current = keys
        let plan = plan(notBefores: current.map(notBefore), now: now)
        for created in plan.create { current.append(try make(created, current)) }
        current.prefix(plan.retire).forEach(retire)
        current.removeFirst(plan.retire)
        return (current, !plan.create.isEmpty || plan.retire > 0)
    }
}
