import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// netextd's link to the machine's Wi-Fi service (found at first use; looked for again at most
/// every 30 s while none answers): the network an interface has joined, for on-demand's
/// `SSIDMatch` and the network handed to hotspot helpers, the scan list, for
/// `netext hotspot list`, and the association signals `WiFiAssociationMonitor` hears. Calls block (D-Bus): callers make them off the task pool.
public final class MachineWiFiService: Sendable {
    private let find: @Sendable () throws(HotspotConfigurationError) -> any WiFiNetworkService
    private let state = Mutex<State>(State())
    /// How long after a failed look the service is looked for again.
    public static let retryInterval: Double = 30

    struct State {
        var service: (any WiFiNetworkService)?
        var retryAfter = 0.0
        var lastFailure: String?
    }

    /// Looks the service up with `find` (the system's by default).
    public init(find: @escaping @Sendable () throws(HotspotConfigurationError) -> any WiFiNetworkService = {
        () throws(HotspotConfigurationError) in try SystemWiFiService.find(timeoutSeconds: 2)
    }) {
        self.find = find
    }

    /// The network `interface` has joined; nil if none, if it is no Wi-Fi interface, or if no
    /// Wi-Fi service answers (then `lastFailure` says why).
    public func joined(interface: String) -> WiFiScanResult? {
        do {
            return try withService { (service: any WiFiNetworkService) throws(HotspotConfigurationError) -> WiFiScanResult? in
                try service.joinedNetwork(interface: interface)
            }
        } catch {
            return nil
        }
    }

    /// What the Wi-Fi service sees (on `interface`, or every Wi-Fi interface) and the networks
    /// joined now; throws why no service answers.
    public func scan(interface: String?) throws(HotspotConfigurationError) -> (service: String, networks: [WiFiScanResult], joined: [WiFiScanResult]) {
        try withService { (service: any WiFiNetworkService) throws(HotspotConfigurationError) -> (service: String, networks: [WiFiScanResult], joined: [WiFiScanResult]) in
            let scan = try service.scanAndJoined(interface: interface)
            return (service.name, scan.networks, scan.joined)
        }
    }

    /// Every Wi-Fi interface's joined network now (those with none absent); throws why no
    /// service answers.
    public func associations() throws(HotspotConfigurationError) -> [String: WiFiScanResult] {
        try withService { (service: any WiFiNetworkService) throws(HotspotConfigurationError) -> [String: WiFiScanResult] in
            var joined: [String: WiFiScanResult] = [:]
            for interface in try service.wifiInterfaces() {
                if let network = try service.joinedNetwork(interface: interface) { joined[interface] = network }
            }
            return joined
        }
    }

    /// Starts hearing the service's association signals (`WiFiNetworkService.watchAssociations`);
    /// nil when it signals nothing; throws why no service answers or the watch cannot start.
    public func watchAssociations(_ changed: @escaping @Sendable () -> Void) throws(HotspotConfigurationError) -> (any WiFiAssociationWatch)? {
        try withService { (service: any WiFiNetworkService) throws(HotspotConfigurationError) -> (any WiFiAssociationWatch)? in
            try service.watchAssociations(changed)
        }
    }

    /// Runs `body` with the service, finding it first if need be. A failure of the service
    /// forgets it (NetworkManager restarted: found again next time).
    private func withService<Value>(
        _ body: (any WiFiNetworkService) throws(HotspotConfigurationError) -> Value
    ) throws(HotspotConfigurationError) -> Value {
        try state.withLock { (state: inout State) throws(HotspotConfigurationError) -> Value in
            let now = Date().timeIntervalSince1970
            if state.service == nil {
                guard now >= state.retryAfter else {
                    throw .systemConfiguration(state.lastFailure ?? "No Wi-Fi service answers.")
                }
                do throws(HotspotConfigurationError) {
                    state.service = try find()
                    state.lastFailure = nil
                } catch {
                    state.lastFailure = error.description
                    state.retryAfter = now + Self.retryInterval
                    throw error
                }
            }
            do throws(HotspotConfigurationError) {
                return try body(state.service!)
            } catch {
                state.service = nil
                state.lastFailure = error.description
                throw error
            }
        }
    }

    /// Why the last look failed, if it did.
    public var lastFailure: String? { state.withLock { $0.lastFailure } }
}
