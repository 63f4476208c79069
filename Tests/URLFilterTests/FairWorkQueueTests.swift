import Foundation
import PIRService
import Synchronization
import Testing

@Suite("PIR work queue: requests take turns, the queue is bounded")
struct FairWorkQueueTests {
    /// Waits for a job to signal (bounded).
    func blockingWait(_ semaphore: DispatchSemaphore, seconds: Int = 20) -> Bool {
        semaphore.wait(timeout: .now() + .seconds(seconds)) == .success
    }

    @Test("one worker, eight requests of 64 jobs queued ahead: a one-job request runs within the next nine jobs, not after 512")
    func smallRequestTakesItsTurn() throws {
        let work = FairWorkQueue(workers: 1, capacity: 1024)
        defer { work.stop() }
        let order = Mutex<[String]>([])
        let gate = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        // Holds the only worker until every request is queued.
        try work.submit([{ _ = gate.wait(timeout: .now() + .seconds(20)) }])
        for flood in 0..<8 {
            try work.submit((0..<64).map { job in { order.withLock { $0.append("flood\(flood).\(job)") } } })
        }
        try work.submit([{ order.withLock { $0.append("small") }; finished.signal() }])
        gate.signal()
        #expect(blockingWait(finished))
        let position = order.withLock { $0.firstIndex(of: "small") }
        #expect(position != nil && position! <= 8, "ran at position \(String(describing: position))")
        // Each flood got exactly one turn before the small request.
        let before = order.withLock { Array($0.prefix(position ?? 0)) }
        #expect(Set(before.map { $0.split(separator: ".")[0] }).count == before.count)
    }

    @Test("a request that does not fit is refused whole, with a Retry-After of at least a second, and nothing of it runs")
    func boundedQueue() throws {
        let work = FairWorkQueue(workers: 1, capacity: 10)
        defer { work.stop() }
        let gate = DispatchSemaphore(value: 0)
        let ran = Atomic<Int>(0)
        let holding = DispatchSemaphore(value: 0)
        try work.submit([{ holding.signal(); _ = gate.wait(timeout: .now() + .seconds(20)) }])
        #expect(blockingWait(holding), "the worker took the first job")
        try work.submit((0..<6).map { _ in { ran.add(1, ordering: .relaxed) } })
        #expect(throws: FairWorkQueue.Overloaded.self) {
            try work.submit((0..<5).map { _ in { ran.add(100, ordering: .relaxed) } })
        }
        do {
            try work.submit((0..<5).map { _ in {} })
            Issue.record("expected the queue to refuse 5 more jobs with 6 of 10 taken")
        } catch {
            #expect(error.retryAfter >= 1 && error.retryAfter <= 60)
        }
        try work.submit((0..<4).map { _ in { ran.add(1, ordering: .relaxed) } })
        #expect(work.queuedJobs == 10)
        gate.signal()
        let deadline = Date().addingTimeInterval(20)
        while ran.load(ordering: .relaxed) < 10, Date() < deadline { usleep(1000) }
        #expect(ran.load(ordering: .relaxed) == 10, "the refused jobs never ran")
    }

    @Test("results come back in order from an async caller, across workers")
    func resultsInOrder() async throws {
        let work = FairWorkQueue(workers: 2, capacity: 100)
        defer { work.stop() }
        let squares = try await work.run(count: 50) { $0 * $0 }
        #expect(squares == (0..<50).map { $0 * $0 })
        #expect(try await work.run { "one" } == "one")
    }
}
