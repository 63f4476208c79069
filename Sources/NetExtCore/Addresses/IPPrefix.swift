#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An IPv4 or IPv6 network prefix such as `10.20.0.0/16` or `fd00::/64`, in canonical form (host
/// bits cleared).
public struct IPPrefix: Sendable, Hashable, Codable, CustomStringConvertible, Comparable {
    /// 4 bytes for IPv4, 16 for IPv6.
    public let address: [UInt8]
    public let length: Int

    public var isIPv6: Bool { address.count == 16 }

    /// Parses `ADDRESS/LENGTH`, or a bare address (a host prefix). Host bits must be zero unless
    /// `allowHostBits` (then they are kept, for interface addresses such as `10.0.0.2/24`).
    public init(_ text: String, allowHostBits: Bool = false) throws(NetExtError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let bytes = IPPrefix.parseAddress(String(parts[0])) else {
            throw .invalid("'\(text)' is not an IP address or prefix")
        }
        let maximum = bytes.count * 8
        var length = maximum
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...maximum).contains(parsed) else {
                throw .invalid("'\(text)': the prefix length must be 0...\(maximum)")
            }
            length = parsed
        }
        let masked = IPPrefix.mask(bytes, length: length)
        if !allowHostBits && masked != bytes {
            throw .invalid("'\(text)' has host bits set; did you mean \(IPPrefix.format(masked))/\(length)?")
        }
        self.address = allowHostBits ? bytes : masked
        self.length = length
    }

    public init(address: [UInt8], length: Int) {
        self.address = address
        self.length = length
    }

    /// The prefix with host bits cleared.
    public var network: IPPrefix { IPPrefix(address: IPPrefix.mask(address, length: length), length: length) }

    /// Whether `other` (an address or prefix) lies inside this prefix.
    public func contains(_ other: IPPrefix) -> Bool {
        other.address.count == address.count && other.length >= length && IPPrefix.mask(other.address, length: length) == IPPrefix.mask(address, length: length)
    }

    /// Whether the address written as `text` lies inside this prefix (false for text that is no
    /// address, or an address of the other family).
    public func contains(address text: String) -> Bool {
        guard let address = IPPrefix.parseAddress(text) else { return false }
        return contains(IPPrefix(address: address, length: address.count * 8))
    }

    public var addressText: String { IPPrefix.format(address) }
    public var description: String { "\(addressText)/\(length)" }

    /// IPv4 before IPv6, then by address, then by length.
    public static func < (lhs: IPPrefix, rhs: IPPrefix) -> Bool {
        if lhs.address.count != rhs.address.count { return lhs.address.count < rhs.address.count }
        if lhs.address != rhs.address { return lhs.address.lexicographicallyPrecedes(rhs.address) }
        return lhs.length < rhs.length
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { self = try IPPrefix(text, allowHostBits: true) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    static func mask(_ bytes: [UInt8], length: Int) -> [UInt8] {
        var result = bytes
        for index in result.indices {
            let bitsHere = max(0, min(8, length - index * 8))
            result[index] &= bitsHere == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - bitsHere))
        }
        return result
    }

    /// Parses an IPv4 or IPv6 address into 4 or 16 bytes.
    public static func parseAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    /// Formats 4 or 16 bytes as an address.
    public static func format(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The dotted IPv4 subnet mask of a prefix length (24 → `255.255.255.0`).
    public static func subnetMask(length: Int) -> String {
        format(mask([255, 255, 255, 255], length: length))
    }

    /// The prefix length of a dotted IPv4 subnet mask (`255.255.255.0` → 24), if contiguous.
    public static func length(ofSubnetMask mask: String) -> Int? {
        guard let bytes = parseAddress(mask), bytes.count == 4 else { return nil }
        let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let ones = value.nonzeroBitCount
        return value == (ones == 0 ? 0 : UInt32.max << (32 - ones)) ? ones : nil
    }
}
