import HTTPCapsules
import NetExtCore

/// Where one connect-ip stream's packets may go: inside the relay's allowed destinations and
/// the scope the client asked for (RFC 9484 §3: target and IP protocol). The routes the relay
/// advertises (ROUTE_ADVERTISEMENT, RFC 9484 §4.7.3) are the same set, as address ranges.
public struct ConnectIPReach: Sendable, Hashable {
    public var allowed: [IPPrefix]
    public var scope: ConnectIPScope

    public init(allowed: [IPPrefix], scope: ConnectIPScope) {
        self.allowed = allowed
        self.scope = scope
    }

    /// Whether a packet to `destination` (4 or 16 bytes) of protocol `ipProtocol` may go.
    public func admits(destination: [UInt8], ipProtocol: UInt8) -> Bool {
        scope.admits(destination: destination, ipProtocol: ipProtocol)
            && allowed.contains { $0.contains(IPPrefix(address: destination, length: destination.count * 8)) }
    }

    /// The prefixes both the relay and the scope allow, of the given families (IPv4: 4, IPv6: 16
    /// address bytes).
    public func prefixes(addressSizes: Set<Int>) -> [IPPrefix] {
        allowed.filter { addressSizes.contains($0.address.count) }.compactMap { allowed in
            switch scope.target {
            case .any: return allowed
            case .name: return nil
            case .prefix(let asked):
                if allowed.contains(asked) { return asked }
                if asked.contains(allowed) { return allowed }
                return nil
            }
        }
    }

    /// The ranges to advertise: those prefixes as inclusive address ranges, merged where they
    /// touch or overlap, ordered by IP version, then protocol, then start (as RFC 9484 §4.7.3
    /// asks), all for the scope's protocol (0: every one).
    public func routes(addressSizes: Set<Int>) -> [IPAddressRange] {
        let ranges = prefixes(addressSizes: addressSizes).map { prefix -> (start: [UInt8], end: [UInt8]) in
            let start = prefix.network.address
            var end = start
            for bit in prefix.length..<(start.count * 8) { end[bit / 8] |= 0x80 >> UInt8(bit % 8) }
            return (start, end)
        }.sorted { $0.start.count != $1.start.count ? $0.start.count < $1.start.count : $0.start.lexicographicallyPrecedes($1.start) }
        var merged: [(start: [UInt8], end: [UInt8])] = []
        for range in ranges {
            if let last = merged.last, last.start.count == range.start.count, !Self.isBeyond(range.start, last.end) {
                if range.end.lexicographicallyPrecedes(last.end) == false { merged[merged.count - 1].end = range.end }
            } else {
                merged.append(range)
            }
        }
        return merged.map {
            IPAddressRange(version: $0.start.count == 4 ? 4 : 6, start: $0.start, end: $0.end, ipProtocol: scope.ipProtocol ?? 0)
        }
    }

    /// Whether `address` lies past `end` + 1 (so a range starting there neither overlaps nor
    /// touches one ending at `end`).
    static func isBeyond(_ address: [UInt8], _ end: [UInt8]) -> Bool {
        // end + 1, saturating at the family's last address.
        var next = end
        var index = next.count - 1
        while index >= 0 {
            if next[index] == 0xff { next[index] = 0; index -= 1 } else { next[index] += 1; break }
        }
        if index < 0 { return false }
        return next.lexicographicallyPrecedes(address)
    }
}
