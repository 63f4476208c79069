/// The few fields of an IP packet the tunnel needs: version, length, source and destination, and
/// the protocol of what it carries.
/// Parsing checks only what those reads rely on; anything shorter or inconsistent is refused.
public struct IPPacketInfo: Sendable, Hashable {
    public var isIPv6: Bool
    /// The packet's length according to its own header (the rest of a buffer is padding).
    public var length: Int
    /// 4 or 16 bytes.
    public var source: [UInt8]
    public var destination: [UInt8]
    /// IPv4's Protocol, IPv6's Next Header (an extension header's number when one follows).
    public var ipProtocol: UInt8

    /// Parses the header at the start of `bytes`; nil if it is not a well-formed IPv4/IPv6 header
    /// or claims more bytes than there are.
    public init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 20 else { return nil }
        switch bytes[0] >> 4 {
        case 4:
            let headerLength = Int(bytes[0] & 0x0f) * 4
            let total = Int(bytes[2]) << 8 | Int(bytes[3])
            guard headerLength >= 20, total >= headerLength, total <= bytes.count else { return nil }
            isIPv6 = false
            length = total
            source = Array(bytes[12..<16])
            destination = Array(bytes[16..<20])
            ipProtocol = bytes[9]
        case 6:
            guard bytes.count >= 40 else { return nil }
            let total = 40 + (Int(bytes[4]) << 8 | Int(bytes[5]))
            guard total <= bytes.count else { return nil }
            isIPv6 = true
            length = total
            source = Array(bytes[8..<24])
            destination = Array(bytes[24..<40])
            ipProtocol = bytes[6]
        default:
            return nil
        }
    }

    public init?(_ bytes: [UInt8]) {
        guard let info = bytes.withUnsafeBytes({ IPPacketInfo($0) }) else { return nil }
        self = info
    }
}

extension IPPacketInfo {
    /// The packet's length according to its own IPv4/IPv6 header, without copying anything; nil
    /// if the header is malformed or claims more bytes than there are. For data-plane loops.
    @inlinable
    public static func length(of bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 20 else { return nil }
        let first = bytes[0]
        switch first >> 4 {
        case 4:
            let total = Int(bytes[2]) << 8 | Int(bytes[3])
            guard first & 0x0f >= 5, total >= Int(first & 0x0f) * 4, total <= bytes.count else { return nil }
            return total
        case 6:
            guard bytes.count >= 40 else { return nil }
            let total = 40 + (Int(bytes[4]) << 8 | Int(bytes[5]))
            return total <= bytes.count ? total : nil
        default:
            return nil
        }
    }

    /// Where the source address starts and how long it is (the destination follows it).
    @inlinable
    public static func addressLayout(of bytes: UnsafeRawBufferPointer) -> (offset: Int, count: Int) {
        bytes[0] >> 4 == 6 ? (8, 16) : (12, 4)
    }
}
