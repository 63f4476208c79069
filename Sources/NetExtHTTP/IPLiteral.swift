#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address written as a URL host (without brackets).
struct IPLiteral: Equatable {
    var bytes: [UInt8]

    init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: v6) { Array($0) }
            return
        }
        return nil
    }

    /// Loopback, private (RFC 1918, RFC 4193) and link-local (RFC 3927, RFC 4291 §2.5.6).
    var isLocal: Bool {
        if bytes.count == 4 {
            switch (bytes[0], bytes[1]) {
            case (127, _), (10, _), (192, 168), (169, 254): return true
            case (172, 16...31): return true
            default: return false
            }
        }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
        return bytes[0] & 0xFE == 0xFC || (bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80)
    }
}
