import Foundation

/// Where flows' blocking reads and writes wait (`readData`, `write`, `readDatagrams`). Each call
/// runs on a serial queue of its own, which dispatch serves from its overcommit threads (one is
/// added whenever none is idle), so a call that blocks holds no thread anyone else needs. On one
/// concurrent queue, served by dispatch's global pool of about one thread a core, a few flows
/// waiting for their apps held the pool's threads, and every other flow's call waited until
/// dispatch added threads, up to a second later (a DNS proxy's p99 was 0.5–1 s under load).
enum FlowIO {
    static func run(_ body: @escaping @Sendable () -> Void) {
        DispatchQueue(label: "netext-flow-io").async(execute: body)
    }
}
