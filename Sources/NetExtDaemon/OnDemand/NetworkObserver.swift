import CNetExtLinux
import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// What connect on demand watches: the network environment its rules look at, and a signal
/// when it may have changed. `NetworkObserver` reads the kernel; NetExtTesting's
/// `ScriptedNetworkObserver` lets a test change the network.
public protocol NetworkObserving: Sendable {
    /// Calls `onChange` after each burst of network changes, until `stop()`.
    func start(onChange: @escaping @Sendable () -> Void)
    func stop()
    /// The environment now (may block: callers run it off the task pool).
    func environment() -> NetworkEnvironment
}

extension NetworkEnvironment {
    /// Fills the DNS part from a resolver file's text: `search`/`domain` and `nameserver` lines.
    public mutating func readResolver(_ text: String) {
        dnsSearchDomains = ResolverConfiguration.values(of: "search", in: text) + ResolverConfiguration.values(of: "domain", in: text)
        dnsServers = ResolverConfiguration.values(of: "nameserver", in: text)
    }
}

/// Watches the kernel for network changes (netlink: links, addresses, routes; RFC 3549) and
/// reads the environment on-demand rules look at.
public final class NetworkObserver: NetworkObserving {
    private let running = Mutex(true)
    private let resolverPath: @Sendable () -> String

    public init(originalResolverContent: @escaping @Sendable () -> String) {
        resolverPath = originalResolverContent
    }

    /// Calls `onChange` (on a thread of its own) after each burst of kernel network events.
    public func start(onChange: @escaping @Sendable () -> Void) {
        let fd = netext_netlink_route_open(500)
        guard fd >= 0 else { return }
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
    }

    public func stop() { running.withLock { $0 = false } }

    /// The environment now: the default route's interface and kind, and the resolver file's
    /// search domains and servers (as they were before netextd changed it).
    public func environment() -> NetworkEnvironment {
        var environment = NetworkEnvironment()
        for family in ["-4", "-6"] where environment.primaryInterface == nil {
            let listing = CommandRunner.run(CommandRunner.ipPath, [family, "-o", "route", "show", "default", "table", "main"]).output
            let words = listing.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
            if let index = words.firstIndex(of: "dev"), index + 1 < words.count { environment.primaryInterface = words[index + 1] }
        }
        if let interface = environment.primaryInterface { environment.interfaceType = Self.kind(of: interface) }
        environment.readResolver(resolverPath())
        return environment
    }

    /// Wi-Fi if the kernel says the device is wireless, cellular for WWAN devices, else ethernet.
    static func kind(of interface: String) -> OnDemandRule.InterfaceType {
        let base = "/sys/class/net/\(interface)"
        if FileManager.default.fileExists(atPath: base + "/wireless") || FileManager.default.fileExists(atPath: base + "/phy80211") { return .wiFi }
        if let uevent = try? String(contentsOfFile: base + "/uevent", encoding: .utf8), uevent.contains("DEVTYPE=wwan") { return .cellular }
        return .ethernet
    }
}
