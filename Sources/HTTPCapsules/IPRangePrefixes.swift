import NetExtCore

/// The smallest list of prefixes that covers an address range exactly (a ROUTE_ADVERTISEMENT's
/// ranges, RFC 9484 §4.7.3, become a routing table's prefixes): from the start, each time the
/// largest aligned block that does not pass the end.
public enum IPRangePrefixes {
    /// Prefixes covering `start`…`end` (both 4 or both 16 bytes, start ≤ end), in order; empty
    /// for anything else.
    public static func covering(start: [UInt8], end: [UInt8]) -> [IPPrefix] {
        guard start.count == end.count, start.count == 4 || start.count == 16 else { return [] }
        let bits = start.count * 8
        var low = number(start)
        let high = number(end)
        guard low <= high else { return [] }
        var prefixes: [IPPrefix] = []
        while true {
            // The block's size: as large as the start's alignment allows, and not past the end.
            var size = low == 0 ? bits : min(bits, low.trailingZeroBitCount)
            while size > 0, (high - low) < span(size) { size -= 1 }
            prefixes.append(IPPrefix(address: bytes(low, count: start.count), length: bits - size))
            let last = low + span(size)
            if last >= high { break }
            low = last + 1
        }
        return prefixes
    }

    /// 2^size − 1 (the last offset in a block of that many host bits; 128 bits is all ones).
    private static func span(_ size: Int) -> UInt128 {
        size >= 128 ? UInt128.max : (UInt128(1) << size) - 1
    }

    private static func number(_ bytes: [UInt8]) -> UInt128 {
        bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
    }

    private static func bytes(_ value: UInt128, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * (count - 1 - $0))) }
    }
}
