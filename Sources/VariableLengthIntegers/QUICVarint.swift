/// Variable-length integers of RFC 9000 §16 (used by Binary HTTP, RFC 9292 §3, and by HTTP
/// capsules, RFC 9297 §3.2): the two high bits of the first byte give the length (1, 2, 4 or 8
/// bytes), the rest is the value, big-endian.
public enum QUICVarint {
    /// The largest value a varint holds (2^62 - 1).
    public static let maximum: UInt64 = (1 << 62) - 1

    /// Appends `value` (at most ``maximum``) in its shortest form.
    public static func append(_ value: UInt64, to out: inout [UInt8]) {
        precondition(value <= maximum)
        switch value {
        case 0..<64: out.append(UInt8(value))
        case 64..<16384: out += [UInt8(0x40 | value >> 8), UInt8(truncatingIfNeeded: value)]
        case 16384..<(1 << 30):
            let tagged = value | 0x8000_0000
            out += (0..<4).map { UInt8(truncatingIfNeeded: tagged >> (8 * (3 - UInt64($0)))) }
        default:
            let tagged = value | 0xC000_0000_0000_0000
            out += (0..<8).map { UInt8(truncatingIfNeeded: tagged >> (8 * (7 - UInt64($0)))) }
        }
    }

    /// Reads one varint at `offset`, advancing it; nil when the bytes end first.
    public static func read(_ bytes: [UInt8], _ offset: inout Int) -> UInt64? {
        guard offset < bytes.count else { return nil }
        let length = 1 << Int(bytes[offset] >> 6)
        guard offset + length <= bytes.count else { return nil }
        var value = UInt64(bytes[offset] & 0x3F)
        for i in 1..<length { value = value << 8 | UInt64(bytes[offset + i]) }
        offset += length
        return value
    }

    /// How many bytes `value`'s shortest form takes.
    public static func encodedLength(_ value: UInt64) -> Int {
        switch value {
        case 0..<64: 1
        case 64..<16384: 2
        case 16384..<(1 << 30): 4
        default: 8
        }
    }
}
