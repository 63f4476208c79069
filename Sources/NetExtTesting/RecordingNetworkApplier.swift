import NetExtCore
import NetExtDaemon
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
    }

    private let recorded = Mutex<[Event]>([])
    private let failure: Mutex<String?>
    private let guardFailure = Mutex(false)
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

    public func localNetworks() -> [IPPrefix] { networks }

    public func applyGuard(_ trafficGuard: TrafficGuard) throws(NetExtError) {
        if guardFailure.withLock({ $0 }) {
            throw NetExtError(.connectionFailed, "nft -f - failed: refused by the recording applier")
        }
        recorded.withLock { $0.append(.guarded(trafficGuard)) }
    }
}
