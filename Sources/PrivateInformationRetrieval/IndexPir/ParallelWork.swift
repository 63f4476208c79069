import Dispatch
import Synchronization

/// Runs independent pieces of work on up to `threads` threads (Dispatch's concurrentPerform
/// with a shared counter, so uneven pieces balance) and returns results in order.
enum ParallelWork {
    static func map<T: Sendable>(
        count: Int, threads: Int, _ body: @Sendable (Int) throws(PirError) -> T
    ) throws(PirError) -> [T] {
        if threads <= 1 || count <= 1 {
            var out: [T] = []
            out.reserveCapacity(count)
            for i in 0..<count { out.append(try body(i)) }
            return out
        }
        let results = Mutex<[Int: T]>([:])
        let failure = Mutex<PirError?>(nil)
        let next = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: min(threads, count)) { _ in
            while true {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < count, failure.withLock({ $0 == nil }) else { return }
                do throws(PirError) {
                    let value = try body(i)
                    results.withLock { $0[i] = value }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return results.withLock { table in (0..<count).map { table[$0]! } }
    }
}
