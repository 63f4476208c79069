import Foundation

/// Where flows' blocking reads and writes wait (`readData`, `write`, `readDatagrams`). Each call
/// runs on a serial queue of its own, which dispatch serves from its overcommit threads (one is
/// added whenever none is idle), so a call that blocks holds no thread anyone else needs. A
/// concurrent queue runs on the global pool of about one thread a core, the pool Swift's tasks
/// run on here too: a few flows waiting for their apps held it, and every other flow's call and
/// the provider's own tasks waited until dispatch added threads, up to a second later (a DNS
/// proxy's p99 was 0.5–1 s under load).
enum FlowIO {
    static func run(_ body: @escaping @Sendable () -> Void) {
        DispatchQueue(label: "netext-flow-io").async(execute: body)
    }
}
