import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// The Wi-Fi network an interface has joined, asked of the machine's Wi-Fi service (found at
/// first use; looked for again at most every 30 s while none answers), so that on-demand's
/// `SSIDMatch` sees the SSID. Calls block (D-Bus): on-demand makes them off the task pool.
public final class JoinedWiFiNetworks: Sendable {
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
        state.withLock { (state: inout State) -> WiFiScanResult? in
            let now = Date().timeIntervalSince1970
            if state.service == nil {
                guard now >= state.retryAfter else { return nil }
                do {
                    state.service = try find()
                    state.lastFailure = nil
                } catch {
                    state.lastFailure = "\(error)"
                    state.retryAfter = now + Self.retryInterval
                    return nil
                }
            }
            do {
                return try state.service?.joinedNetwork(interface: interface)
            } catch {
                // The service went away (NetworkManager restarted): find it again next time.
                state.service = nil
                state.lastFailure = "\(error)"
                return nil
            }
        }
    }

    /// Why the last look failed, if it did.
    public var lastFailure: String? { state.withLock { $0.lastFailure } }
}
