import Dispatch

/// Runs work that blocks its thread (a system tool, a probe over a socket, `waitpid`) on a
/// Dispatch thread instead of Swift's cooperative pool, whose few threads (one per core) every
/// actor and task of the process shares: one blocked there stalls everything else.
public enum BlockingWork {
    private static let queue = DispatchQueue(label: "netext.blocking", attributes: .concurrent)

    /// Runs `work` off the cooperative pool and returns its result.
    public static func run<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}
