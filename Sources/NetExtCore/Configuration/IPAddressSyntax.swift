#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Syntax checks for IP address text.
public enum IPAddressSyntax {
    /// Whether the text is an IPv4 or IPv6 address in standard notation.
    public static func isValid(_ text: String) -> Bool {
        isIPv4(text) || isIPv6(text)
    }

    public static func isIPv4(_ text: String) -> Bool {
        var storage = in_addr()
        return inet_pton(AF_INET, text, &storage) == 1
    }

    public static func isIPv6(_ text: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET6, text, &storage) == 1
    }
}
