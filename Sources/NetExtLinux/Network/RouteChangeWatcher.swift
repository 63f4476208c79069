import CNetExtLinux
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Watches the kernel's routing state (netlink route socket, RFC 3549: links, addresses,
/// routes) and calls back after each burst of changes, on a thread of its own.
public final class RouteChangeWatcher: Sendable {
    private let running = Mutex(false)

    public init() {}

    /// Starts watching; `onChange` runs after each burst (events read until a 500 ms quiet).
    /// Returns false if the netlink socket could not be opened.
    @discardableResult
    public func start(onChange: @escaping @Sendable () -> Void) -> Bool {
        let fd = netext_netlink_route_open(500)
        guard fd >= 0 else { return false }
        running.withLock { $0 = true }
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 16_384)
            var pending = false
            while self.running.withLock({ $0 }) {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    pending = true
                    continue  // drain the burst first
                }
                if pending {
                    pending = false
                    onChange()
                }
            }
            close(fd)
        }
        return true
    }

    /// Stops after the current wait (at most 500 ms).
    public func stop() { running.withLock { $0 = false } }
}

/// What the kernel says about the machine's network interfaces.
public enum NetworkInterfaces {
    /// The interface of the main table's default route (IPv4 first, then IPv6), if any.
    public static func defaultRouteInterface() -> String? {
        for family in ["-4", "-6"] {
            let listing = CommandRunner.run(CommandRunner.ipPath, [family, "-o", "route", "show", "default", "table", "main"]).output
            let words = listing.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
            if let index = words.firstIndex(of: "dev"), index + 1 < words.count { return words[index + 1] }
        }
        return nil
    }

    /// The kinds of network device `/sys/class/net` tells apart.
    public enum Kind: Sendable, Hashable {
        case wireless, wwan, other
    }

    /// Wireless if the device has a `wireless` or `phy80211` entry, WWAN if its uevent says so.
    public static func kind(of interface: String) -> Kind {
        let base = "/sys/class/net/\(interface)"
        if FileManager.default.fileExists(atPath: base + "/wireless") || FileManager.default.fileExists(atPath: base + "/phy80211") { return .wireless }
        if let uevent = try? String(contentsOfFile: base + "/uevent", encoding: .utf8), uevent.contains("DEVTYPE=wwan") { return .wwan }
        return .other
    }
}
