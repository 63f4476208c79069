import NetExtCore
import NetExtDaemon
import Synchronization

/// A network observer a test steers, for connect on demand without netlink or root: the
/// primary interface and its kind are set by the test, the DNS part is read from a resolver
/// text (the lab's resolver file as it was before netextd changed it), and `changed()`
/// announces a change the way a burst of kernel events would.
public final class ScriptedNetworkObserver: NetworkObserving {
    private let state: Mutex<(interface: String?, kind: OnDemandRule.InterfaceType?, onChange: (@Sendable () -> Void)?)>
    private let resolverText: @Sendable () -> String

    /// - Parameters:
    ///   - primaryInterface: the default route's interface (nil: no network).
    ///   - resolverText: the resolver file's text the rules see.
    public init(primaryInterface: String? = "eth0", interfaceType: OnDemandRule.InterfaceType? = .ethernet, resolverText: @escaping @Sendable () -> String) {
        state = Mutex((primaryInterface, interfaceType, nil))
        self.resolverText = resolverText
    }

    public func start(onChange: @escaping @Sendable () -> Void) {
        state.withLock { $0.onChange = onChange }
    }

    public func stop() {
        state.withLock { $0.onChange = nil }
    }

    public func environment() -> NetworkEnvironment {
        let (interface, kind) = state.withLock { ($0.interface, $0.kind) }
        var environment = NetworkEnvironment(primaryInterface: interface, interfaceType: interface == nil ? nil : kind)
        environment.readResolver(resolverText())
        return environment
    }

    /// Moves the machine to another network (nil: none), and announces it.
    public func join(primaryInterface: String?, interfaceType: OnDemandRule.InterfaceType?) {
        state.withLock {
            $0.interface = primaryInterface
            $0.kind = interfaceType
        }
        changed()
    }

    /// Announces a change, as the kernel's events would.
    public func changed() {
        state.withLock { $0.onChange }?()
    }
}
