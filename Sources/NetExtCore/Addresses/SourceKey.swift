/// A client's address as per-source limits see it: the IPv4 address, or the IPv6 /64 (a host
/// usually holds a whole /64, so counting single IPv6 addresses would let one host take any
/// number of keys). An IPv4-mapped IPv6 address counts as its IPv4 address, so a dual-stack
/// socket and an IPv4 one agree.
public struct SourceKey: Hashable, Sendable {
    let isIPv6: Bool
    let bits: UInt64

    /// The key of an address (4 or 16 bytes in network order); nil for any other length.
    /// Allocation-free: it runs for every accepted connection and every initiation under load.
    public init?(address: some Collection<UInt8>) {
        let count = address.count
        guard count == 4 || count == 16 else { return nil }
        var high: UInt64 = 0, low: UInt64 = 0
        for (index, byte) in address.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        if count == 4 {
            isIPv6 = false
            bits = high
        } else if high == 0, low >> 32 == 0xffff {
            isIPv6 = false
            bits = low & 0xffff_ffff
        } else {
            isIPv6 = true
            bits = high
        }
    }
}
