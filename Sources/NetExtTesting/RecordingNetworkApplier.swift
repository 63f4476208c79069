import NetExtCore
import NetExtDaemon
import NetExtLinux
import Synchronization

/// A network applier that changes nothing and remembers every call, for testing netextd's
/// sessions without root: what was applied, torn down and guarded, in order. A plan whose
/// step matches `failingStep` is refused the way `ip` refuses it.
public final class RecordingNetworkApplier: NetworkApplier {
    /// One call, as the session manager made it.
    public enum Event: Sendable, Hashable {
        case applied(NetworkPlan)
        /// Only the difference between the two was applied (`NetworkPlan.changeCommands(from:)`).
        case changed(from: NetworkPlan, to: NetworkPlan)
        case tornDown(NetworkPlan)
        case removedStale(tables: ClosedRange<Int>, priorities: ClosedRange<Int>)
        case guarded(TrafficGuard)
        /// The per-app steering table was installed (no member: removed).
        case steered(FlowSteering)
        /// The DNS guard was installed (inactive: removed).
        case dnsGuarded(DNSGuard)
        /// A tunnel interface was opened (a socketpair stands in for the TUN device).
        case openedInterface(String)
    }

    private let recorded = Mutex<[Event]>([])
    /// The test's ends of the interfaces opened: name → descriptor.
    private let interfaces = Mutex<[String: Int32]>([:])
    private let failure: Mutex<String?>
    private let guardFailure = Mutex(false)
    private let steeringFailures = Mutex(0)
    private let mtu: Int?
    private let networks: [IPPrefix]

    /// - Parameters:
    ///   - underlyingMTU: what `underlyingMTU(toward:)` answers.
    ///   - localNetworks: what `localNetworks()` answers.
    ///   - failingStep: a plan with an apply command containing this word fails.
    public init(underlyingMTU: Int? = 1500, localNetworks: [IPPrefix] = [], failingStep: String? = nil) {
        self.mtu = underlyingMTU
        self.networks = localNetworks
        self.failure = Mutex(failingStep)
    }

    /// Every call so far, oldest first.
    public var events: [Event] { recorded.withLock { $0 } }

    /// The plans applied and not torn down since, in the order they were applied.
    public var activePlans: [NetworkPlan] {
        var active: [NetworkPlan] = []
        for event in events {
            switch event {
            case .applied(let plan): active.append(plan)
            case .changed(let previous, let plan):
                if let index = active.firstIndex(of: previous) { active[index] = plan } else { active.append(plan) }
            case .tornDown(let plan): active.removeAll { $0 == plan }
            default: break
            }
        }
        return active
    }

    /// The traffic guard last installed (nil: none was).
    public var currentGuard: TrafficGuard? {
        events.reversed().lazy.compactMap { if case .guarded(let trafficGuard) = $0 { trafficGuard } else { nil } }.first
    }

    /// The per-app steering last installed (nil: none was).
    public var currentSteering: FlowSteering? {
        events.reversed().lazy.compactMap { if case .steered(let steering) = $0 { steering } else { nil } }.first
    }

    /// Makes the next `count` steering installs fail the way nft refuses a cgroup that vanished.
    public func failSteering(times count: Int) { steeringFailures.withLock { $0 = count } }

    /// Makes later traffic-guard installs fail the way `nft` refuses a ruleset (or succeed again).
    public func failGuards(_ fail: Bool) { guardFailure.withLock { $0 = fail } }

    /// Makes later applies of a plan with this word in a command fail (nil: none fail).
    public func failApplies(containing step: String?) { failure.withLock { $0 = step } }

    public func apply(_ plan: NetworkPlan) throws(NetExtError) {
        try refuse(plan.applyCommands)
        recorded.withLock { $0.append(.applied(plan)) }
    }

    public func apply(_ plan: NetworkPlan, replacing previous: NetworkPlan) throws(NetExtError) {
        try refuse(plan.changeCommands(from: previous))
        recorded.withLock { $0.append(.changed(from: previous, to: plan)) }
    }

    private func refuse(_ commands: [[String]]) throws(NetExtError) {
        if let step = failure.withLock({ $0 }), let command = commands.first(where: { $0.contains(step) }) {
            throw NetExtError(.connectionFailed, "ip \(command.joined(separator: " ")) failed: refused by the recording applier (undone)")
        }
    }

    public func teardown(_ plan: NetworkPlan) { recorded.withLock { $0.append(.tornDown(plan)) } }

    public func removeStale(tables: ClosedRange<Int>, priorities: ClosedRange<Int>) {
        recorded.withLock { $0.append(.removedStale(tables: tables, priorities: priorities)) }
    }

    public func underlyingMTU(toward address: String) -> Int? { mtu }

    /// A sequenced-packet socketpair stands in for the TUN device (one packet per read, as on a
    /// TUN descriptor); the test's end is `interfaceEnd(named:)`. Names are `faketun0`, `1`…
    public func openTunnelInterface(pattern: String) throws(NetExtError) -> (fd: Int32, name: String) {
        let pair: (Int32, Int32)
        do { pair = try SocketPair.makePackets() } catch {
            throw NetExtError(.connectionFailed, "cannot create a fake tunnel interface: \(error)")
        }
        let name = interfaces.withLock { open in
            let name = "faketun\(open.count)"
            open[name] = pair.1
            return name
        }
        recorded.withLock { $0.append(.openedInterface(name)) }
        return (pair.0, name)
    }

    /// The test's end of an opened interface: write a packet to inject it into the tunnel,
    /// read to see what the provider wrote.
    public func interfaceEnd(named name: String) -> Int32? { interfaces.withLock { $0[name] } }

    deinit {
        for fd in interfaces.withLock({ Array($0.values) }) { SocketPair.close(fd) }
    }

    public func localNetworks() -> [IPPrefix] { networks }

    public func applyGuard(_ trafficGuard: TrafficGuard) throws(NetExtError) {
        if guardFailure.withLock({ $0 }) {
            throw NetExtError(.connectionFailed, "nft -f - failed: refused by the recording applier")
        }
        recorded.withLock { $0.append(.guarded(trafficGuard)) }
    }

    public func applyDNSGuard(_ dnsGuard: DNSGuard) throws(NetExtError) {
        recorded.withLock { $0.append(.dnsGuarded(dnsGuard)) }
    }

    public func applySteering(_ steering: FlowSteering) throws(NetExtError) {
        let fail = steeringFailures.withLock { remaining in
            guard remaining > 0 else { return false }
            remaining -= 1
            return true
        }
        if fail { throw NetExtError(.connectionFailed, "nft refused the per-app steering: cgroupv2 path fails: No such file or directory") }
        recorded.withLock { $0.append(.steered(steering)) }
    }
}
