import Foundation

/// Runs `body` on a thread of its own and returns its result. For tests that block (a lab
/// script for minutes, a raw socket read): Swift's cooperative pool has one thread per core
/// (two on the CI machine), and a test that held one that long starved every other test's
/// servers, whose upstream timeouts then fired under load.
public func offPool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
