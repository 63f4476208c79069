import Foundation
import NetExtCore
import NetExtLinux

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
        let settings = ResolverFileText.settings(in: text)
        dnsSearchDomains = settings.searchDomains
        dnsServers = settings.servers
    }
}

extension NetworkEnvironment {
    /// Fills the SSID from the network the primary interface has joined, if the Wi-Fi service
    /// knows that interface as a Wi-Fi interface (which then is the interface's type, whatever
    /// its driver told the kernel).
    public mutating func readJoinedWiFi(_ wifi: MachineWiFiService) {
        guard let interface = primaryInterface, let network = wifi.joined(interface: interface) else { return }
        ssid = network.ssid
        interfaceType = .wiFi
    }
}

/// Watches the kernel for network changes (NetExtLinux's `RouteChangeWatcher`) and reads the
/// environment on-demand rules look at.
public final class NetworkObserver: NetworkObserving {
    private let watcher = RouteChangeWatcher()
    private let resolverPath: @Sendable () -> String
    private let wifi: MachineWiFiService?

    /// `wifi`: where the joined Wi-Fi network's SSID comes from (nil: never asked).
    public init(originalResolverContent: @escaping @Sendable () -> String, wifi: MachineWiFiService? = nil) {
        resolverPath = originalResolverContent
        self.wifi = wifi
    }

    /// Calls `onChange` (on a thread of its own) after each burst of kernel network events.
    public func start(onChange: @escaping @Sendable () -> Void) {
        watcher.start(onChange: onChange)
    }

    public func stop() { watcher.stop() }

    /// The environment now: the default route's interface and kind, the SSID it has joined if
    /// the Wi-Fi service knows it as a Wi-Fi interface, and the resolver file's search domains
    /// and servers (as they were before netextd changed it).
    public func environment() -> NetworkEnvironment {
        var environment = NetworkEnvironment()
        environment.primaryInterface = NetworkInterfaces.defaultRouteInterface()
        if let interface = environment.primaryInterface {
            switch NetworkInterfaces.kind(of: interface) {
            case .wireless: environment.interfaceType = .wiFi
            case .wwan: environment.interfaceType = .cellular
            case .other: environment.interfaceType = .ethernet
            }
            if let wifi { environment.readJoinedWiFi(wifi) }
        }
        environment.readResolver(resolverPath())
        return environment
    }
}
