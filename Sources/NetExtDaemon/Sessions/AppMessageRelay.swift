import Foundation
import NetExtCore

/// Apps' messages waiting for their provider's answer (Apple's `sendProviderMessage`): each gets
/// an id the provider's reply carries back, and exactly one result — the reply, a failure to
/// deliver, the provider's exit, or the deadline, whichever comes first.
///
/// A value type: its owner (the session manager actor) serialises every call.
struct AppMessageRelay {
    typealias Waiter = CheckedContinuation<Result<Data?, NetExtError>, Never>

    private var pending: [Int: (configuration: UUID, waiter: Waiter)] = [:]
    private var nextID = 1

    /// How many messages wait for an answer.
    var waitingCount: Int { pending.count }

    /// Records a message to `configuration`'s provider and returns the id to send it with.
    mutating func register(to configuration: UUID, waiter: Waiter) -> Int {
        let id = nextID
        nextID += 1
        pending[id] = (configuration, waiter)
        return id
    }

    /// A provider's reply: delivered only if `id` waits for an answer from that configuration
    /// (a provider cannot answer another configuration's message). Returns whether it did.
    @discardableResult
    mutating func reply(_ id: Int, from configuration: UUID, data: Data?) -> Bool {
        guard let entry = pending[id], entry.configuration == configuration else { return false }
        pending[id] = nil
        entry.waiter.resume(returning: .success(data))
        return true
    }

    /// Ends one message with `result`, unless it has already ended.
    mutating func finish(_ id: Int, _ result: Result<Data?, NetExtError>) {
        pending.removeValue(forKey: id)?.waiter.resume(returning: result)
    }

    /// Fails every message waiting for `configuration`'s provider (it exited).
    mutating func failAll(of configuration: UUID, _ error: NetExtError) {
        for (id, entry) in pending where entry.configuration == configuration {
            pending[id] = nil
            entry.waiter.resume(returning: .failure(error))
        }
    }
}
