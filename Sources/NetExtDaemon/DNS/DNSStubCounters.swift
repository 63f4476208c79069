import Synchronization

/// The DNS stub's counters, each an atomic: counted from every receiving thread and event loop
/// without a lock (a shared lock cost the resolver a tenth of its rate at 100,000 queries/s).
final class DNSStubCounters: Sendable {
    enum Counter {
        case forwardedToTunnel, forwardedToSystem, malformed, unanswered, busy
        case forwardedBySettings, encryptedFailures, cleartextFallbacks, cacheHits
    }

    private let forwardedToTunnel = Atomic<UInt64>(0)
    private let forwardedToSystem = Atomic<UInt64>(0)
    private let malformed = Atomic<UInt64>(0)
    private let unanswered = Atomic<UInt64>(0)
    private let busy = Atomic<UInt64>(0)
    private let forwardedBySettings = Atomic<UInt64>(0)
    private let encryptedFailures = Atomic<UInt64>(0)
    private let cleartextFallbacks = Atomic<UInt64>(0)
    private let cacheHits = Atomic<UInt64>(0)

    func add(_ counter: Counter) {
        switch counter {
        case .forwardedToTunnel: forwardedToTunnel.add(1, ordering: .relaxed)
        case .forwardedToSystem: forwardedToSystem.add(1, ordering: .relaxed)
        case .malformed: malformed.add(1, ordering: .relaxed)
        case .unanswered: unanswered.add(1, ordering: .relaxed)
        case .busy: busy.add(1, ordering: .relaxed)
        case .forwardedBySettings: forwardedBySettings.add(1, ordering: .relaxed)
        case .encryptedFailures: encryptedFailures.add(1, ordering: .relaxed)
        case .cleartextFallbacks: cleartextFallbacks.add(1, ordering: .relaxed)
        case .cacheHits: cacheHits.add(1, ordering: .relaxed)
        }
    }

    var snapshot: DNSStub.Counters {
        var counters = DNSStub.Counters()
        counters.forwardedToTunnel = forwardedToTunnel.load(ordering: .relaxed)
        counters.forwardedToSystem = forwardedToSystem.load(ordering: .relaxed)
        counters.malformed = malformed.load(ordering: .relaxed)
        counters.unanswered = unanswered.load(ordering: .relaxed)
        counters.busy = busy.load(ordering: .relaxed)
        counters.forwardedBySettings = forwardedBySettings.load(ordering: .relaxed)
        counters.encryptedFailures = encryptedFailures.load(ordering: .relaxed)
        counters.cleartextFallbacks = cleartextFallbacks.load(ordering: .relaxed)
        counters.cacheHits = cacheHits.load(ordering: .relaxed)
        return counters
    }
}
