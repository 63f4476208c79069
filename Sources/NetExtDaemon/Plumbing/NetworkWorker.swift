import Dispatch
import NetExtCore

/// Runs the network applier's steps — each one a system tool (`ip`, `nft`) that blocks until it
/// exits or its deadline passes — one at a time on a queue of its own, in the order they were
/// asked for. The session actor awaits them instead of running them, so a slow or hung tool
/// holds up only the network change that needs it: status requests, app messages and other
/// configurations' events go on being answered meanwhile, and no thread of Swift's cooperative
/// pool is ever blocked.
///
/// Because the queue is serial and callers enqueue from the actor, changes reach the system in
/// the order the actor decided them: the last traffic guard asked for is the one in force, and
/// a plan torn down after it was applied is gone.
public final class NetworkWorker: Sendable {
    public let applier: any NetworkApplier
    private let queue = DispatchQueue(label: "netextd.network", qos: .userInitiated)

    public init(applier: any NetworkApplier) {
        self.applier = applier
    }

    /// Runs `step` after every step asked for before it; returns its result.
    public func perform<Value: Sendable>(_ step: @escaping @Sendable (any NetworkApplier) -> Value) async -> Value {
        let applier = self.applier
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: step(applier)) }
        }
    }

    /// As `perform`, for a step that can fail.
    public func performThrowing<Value: Sendable>(_ step: @escaping @Sendable (any NetworkApplier) throws(NetExtError) -> Value) async throws(NetExtError) -> Value {
        let applier = self.applier
        let result: Result<Value, NetExtError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(NetExtError) { continuation.resume(returning: .success(try step(applier))) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Queues `step` without waiting for it (undoing: teardown, guard release).
    public func enqueue(_ step: @escaping @Sendable (any NetworkApplier) -> Void) {
        let applier = self.applier
        queue.async { step(applier) }
    }

    /// Returns once every step asked for so far has run.
    public func drain() async {
        await perform { _ in () }
    }
}
