#if canImport(Glibc)
import Glibc
#endif

import Foundation

/// An interface's first IPv4 address (getifaddrs(3)) and its hardware address (sysfs).
public struct InterfaceIdentity: Sendable, Hashable {
    public var ipv4Address: [UInt8]
    public var hardwareAddress: [UInt8]

    /// The identity of `interface`; nil when it has no IPv4 address.
    public static func of(_ interface: String) -> InterfaceIdentity? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(first) }
        var ipv4: [UInt8]?
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let name = current.pointee.ifa_name, String(cString: name) == interface, let address = current.pointee.ifa_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET where ipv4 == nil:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                    ipv4 = withUnsafeBytes(of: inet.pointee.sin_addr) { Array($0) }
                }
            default:
                break
            }
        }
        return ipv4.map { InterfaceIdentity(ipv4Address: $0, hardwareAddress: hardwareAddress(of: interface)) }
    }

    /// `/sys/class/net/NAME/address` ("02:00:00:00:00:01"), empty when unreadable.
    public static func hardwareAddress(of interface: String) -> [UInt8] {
        guard !interface.contains("/"), let text = try? String(contentsOfFile: "/sys/class/net/\(interface)/address", encoding: .utf8) else { return [] }
        let bytes = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").compactMap { UInt8($0, radix: 16) }
        return bytes.count <= 16 ? bytes : []
    }
}
