import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Waiting for SIGTERM or SIGINT (orderly shutdown of daemons and servers).
public enum TerminationSignals {
    /// Suspends until SIGTERM or SIGINT arrives; returns its name.
    public static func wait() async -> String {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let queue = DispatchQueue(label: "netext.signals")
        return await withCheckedContinuation { continuation in
            let once = Once(continuation)
            for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { once.fire(name) }
                source.resume()
                once.keep(source)
            }
        }
    }

    /// Resumes the continuation once, from whichever signal comes first; keeps the sources alive.
    private final class Once: Sendable {
        private struct State: @unchecked Sendable {
            var continuation: CheckedContinuation<String, Never>?
            var sources: [any DispatchSourceSignal] = []
        }
        private let state: Mutex<State>
        init(_ continuation: CheckedContinuation<String, Never>) { state = Mutex(State(continuation: continuation)) }
        func keep(_ source: any DispatchSourceSignal) { state.withLock { $0.sources.append(source) } }
        func fire(_ name: String) {
            let continuation = state.withLock { state in
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(returning: name)
        }
    }
}
