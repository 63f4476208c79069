import Synchronization

/// A one-way flag one task sets and another waits for, with a bound on the wait.
final class CompletionFlag: Sendable {
    private let done = Atomic<Bool>(false)

    func set() { done.store(true, ordering: .releasing) }

    var isSet: Bool { done.load(ordering: .acquiring) }

    /// Returns once the flag is set or `limit` has passed, looking every 10 ms.
    func wait(atMost limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while !isSet, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}
