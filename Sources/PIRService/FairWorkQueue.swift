import Foundation
import Synchronization

/// CPU-bound work (PIR queries) on a fixed set of threads, shared fairly between requests and
/// bounded in size.
///
/// - Each request is a *flow*; its jobs take turns with every other flow's, one job per turn
///   (round robin), so a request of one query waits for at most one query of each request in
///   progress — never for all 64 queries of every message ahead of it.
/// - At most `capacity` jobs wait at any time. A flow whose jobs do not all fit is refused as a
///   whole (`Overloaded`, answered 503 with Retry-After) and nothing of it runs.
///
/// The requests' peers are deliberately unknown here (`HTTPServerRequest` carries no address),
/// so fairness is per request: behind an Oblivious HTTP gateway every request comes from the
/// gateway anyway.
public final class FairWorkQueue: Sendable {
    /// Refused: the queue is full. `retryAfter` estimates when the jobs ahead will have run.
    public struct Overloaded: Error, Sendable, Equatable {
        public let retryAfter: Int
    }

    public typealias Job = @Sendable () -> Void

    private struct Flow {
        var jobs: [Job]
        var next = 0
        var remaining: Int { jobs.count - next }
    }

    private struct State {
        var flows: [UInt64: Flow] = [:]
        /// Flows with jobs waiting, in turn order.
        var turns: [UInt64] = []
        var turnHead = 0
        var nextFlow: UInt64 = 0
        var queued = 0
        var running = 0
        var stopped = false
        /// Mean job time in microseconds (exponentially weighted), for Retry-After.
        var meanJobMicroseconds = 10_000.0

        mutating func popTurn() -> UInt64? {
            guard turnHead < turns.count else { return nil }
            let flow = turns[turnHead]
            turnHead += 1
            if turnHead > 1024, turnHead * 2 > turns.count {
                turns.removeFirst(turnHead)
                turnHead = 0
            }
            return flow
        }
    }

    public let workers: Int
    public let capacity: Int
    private let state = Mutex(State())
    private let wake = NSCondition()

    /// Starts `workers` threads (default: one per processor).
    public init(workers: Int = ProcessInfo.processInfo.activeProcessorCount, capacity: Int = 1024) {
        self.workers = max(1, workers)
        self.capacity = max(1, capacity)
        for index in 0..<self.workers {
            let thread = Thread { [self] in workLoop() }
            thread.name = "netext.pir.worker.\(index)"
            thread.start()
        }
    }

    /// Stops the threads once the jobs already queued have run.
    public func stop() {
        state.withLock { $0.stopped = true }
        wakeWorkers()
    }

    /// Wakes every waiting worker. Taken under the condition's lock: a worker checks the state
    /// and starts waiting under that lock, so a change made before this call is never missed.
    private func wakeWorkers() {
        wake.lock()
        wake.broadcast()
        wake.unlock()
    }

    /// Jobs waiting (not running) now.
    public var queuedJobs: Int { state.withLock { $0.queued } }

    /// Queues `jobs` as one flow, all or none.
    public func submit(_ jobs: [Job]) throws(Overloaded) {
        guard !jobs.isEmpty else { return }
        let refusal: Overloaded? = state.withLock { state in
            guard state.queued + jobs.count <= capacity else {
                let ahead = Double(state.queued + state.running) * state.meanJobMicroseconds / Double(workers)
                return Overloaded(retryAfter: min(60, max(1, Int((ahead / 1e6).rounded(.up)))))
            }
            state.nextFlow += 1
            state.flows[state.nextFlow] = Flow(jobs: jobs)
            state.turns.append(state.nextFlow)
            state.queued += jobs.count
            return nil
        }
        if let refusal { throw refusal }
        wakeWorkers()
    }

    /// Runs `count` jobs (`body(0)` … `body(count - 1)`) as one flow and returns their results
    /// in order once all have run.
    public func run<Result: Sendable>(count: Int, _ body: @escaping @Sendable (Int) -> Result) async throws(Overloaded) -> [Result] {
        let results = Mutex<[Result?]>(Array(repeating: nil, count: count))
        let left = Atomic<Int>(count)
        let outcome: Swift.Result<[Result], Overloaded> = await withCheckedContinuation { continuation in
            let jobs: [Job] = (0..<count).map { index in
                {
                    let value = body(index)
                    results.withLock { $0[index] = value }
                    if left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                        continuation.resume(returning: .success(results.withLock { $0.map { $0! } }))
                    }
                }
            }
            do throws(Overloaded) {
                try submit(jobs)
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try outcome.get()
    }

    /// Runs one job as its own flow and returns its result.
    public func run<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async throws(Overloaded) -> Result {
        try await run(count: 1) { _ in body() }[0]
    }

    private func workLoop() {
        while true {
            guard let job = nextJob() else { return }
            let start = DispatchTime.now().uptimeNanoseconds
            job()
            let micros = Double(DispatchTime.now().uptimeNanoseconds - start) / 1000
            state.withLock { state in
                state.running -= 1
                state.meanJobMicroseconds += (micros - state.meanJobMicroseconds) / 16
            }
        }
    }

    /// The next flow's next job (the flow goes to the back of the turns if it has more), waiting
    /// while there is none; nil once stopped and drained.
    private func nextJob() -> Job? {
        wake.lock()
        defer { wake.unlock() }
        while true {
            let taken: (job: Job?, stop: Bool) = state.withLock { state in
                guard let id = state.popTurn(), var flow = state.flows[id] else { return (nil, state.stopped) }
                let job = flow.jobs[flow.next]
                flow.next += 1
                state.queued -= 1
                state.running += 1
                if flow.remaining > 0 {
                    state.flows[id] = flow
                    state.turns.append(id)
                } else {
                    state.flows[id] = nil
                }
                return (job, false)
            }
            if let job = taken.job { return job }
            if taken.stop { return nil }
            wake.wait()
        }
    }
}
