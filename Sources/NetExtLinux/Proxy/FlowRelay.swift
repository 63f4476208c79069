import CNetExtLinux
import Foundation
import Synchronization

/// Moves the bytes of many connection pairs inside the kernel on one thread (an epoll loop,
/// non-blocking splice through a pipe per direction; `relay.c`): how an app proxy carries a
/// flow without a thread of its own or a copy through user space. Each pair's sockets belong to
/// the relay once handed over, and are closed when both directions have ended (in order) or
/// one failed (then both are reset).
public final class FlowRelay: @unchecked Sendable {
    /// How a pair ended: the bytes each way, and the failure that ended it, if one did.
    public struct Outcome: Sendable, Hashable {
        public var appToUpstream: Int
        public var upstreamToApp: Int
        public var error: SystemError?
    }

    private let relay: OpaquePointer
    private let completions = Mutex<[UInt64: @Sendable (Outcome) -> Void]>([:])
    private let nextID = Atomic<UInt64>(1)

    /// The process's relay, started on first use.
    public static let shared: FlowRelay? = try? FlowRelay()

    /// A relay with its thread running.
    public init() throws(SystemError) {
        guard let made = netext_relay_create() else { throw SystemError("flow relay", errno: errno) }
        relay = made
        // The thread holds the relay until it is stopped (the process's shared relay never is).
        let thread = Thread { [self] in
            let capacity = 256
            let done = UnsafeMutablePointer<netext_relay_done>.allocate(capacity: capacity)
            defer { done.deallocate() }
            while true {
                let count = netext_relay_run(relay, done, Int32(capacity))
                if count < 0 { break }
                for index in 0..<Int(count) {
                    let outcome = done[index]
                    let completion = completions.withLock { $0.removeValue(forKey: outcome.id) }
                    completion?(Outcome(
                        appToUpstream: Int(outcome.app_to_upstream), upstreamToApp: Int(outcome.upstream_to_app),
                        error: outcome.error == 0 ? nil : SystemError("relay", errno: outcome.error)))
                }
            }
            netext_relay_destroy(relay)
        }
        thread.name = "netext-flow-relay"
        thread.start()
    }

    /// Relays between `app` and `upstream` (connected; both the relay's from now on).
    /// `completion` runs on the relay's thread when the pair has ended: keep it short.
    public func relay(app: Int32, upstream: Int32, completion: @escaping @Sendable (Outcome) -> Void) throws(SystemError) {
        let id = register(completion)
        let result = netext_relay_add(relay, id, app, upstream)
        if result < 0 {
            _ = completions.withLock { $0.removeValue(forKey: id) }
            throw SystemError("flow relay", errno: -result)
        }
    }

    /// Connects to `destination` without blocking and relays between it and `app` (the relay's
    /// from now on); a failed connection resets `app` and reports the error. `mark`: the new
    /// socket's SO_MARK (CAP_NET_ADMIN), set before its route is chosen.
    public func relay(app: Int32, connectingTo destination: SocketAddress, mark: UInt32 = 0, completion: @escaping @Sendable (Outcome) -> Void) throws(SystemError) {
        let id = register(completion)
        let result = destination.address.withUnsafeBufferPointer { bytes in
            netext_relay_add_connect(relay, id, app, destination.isIPv6 ? 6 : 4, bytes.baseAddress, destination.port, mark)
        }
        if result < 0 {
            _ = completions.withLock { $0.removeValue(forKey: id) }
            throw SystemError("connect", errno: -result, subject: destination.description)
        }
    }

    private func register(_ completion: @escaping @Sendable (Outcome) -> Void) -> UInt64 {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        completions.withLock { $0[id] = completion }
        return id
    }
}
