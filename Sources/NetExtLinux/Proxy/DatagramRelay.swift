import CNetExtLinux
import Foundation
import Synchronization

/// Carries the datagrams of many UDP flows on one thread (an epoll loop, `datagram_relay.c`):
/// how netextd sends on a UDP flow a transparent proxy declined, without a thread per flow.
/// Each pair is a flow's socket (bound to where the app sent, connected to the app) and an
/// upstream socket connected to that destination; UDP has no end, so a pair is closed after
/// ``idleLimit`` without a datagram either way (the app's next datagram is a new flow).
public final class DatagramRelay: @unchecked Sendable {
    /// How long a pair lives without a datagram either way.
    public static let idleLimit: Duration = .seconds(60)

    private let relay: OpaquePointer
    private let completions = Mutex<[UInt64: @Sendable (FlowRelay.Outcome) -> Void]>([:])
    private let nextID = Atomic<UInt64>(1)

    /// The process's relay, started on first use.
    public static let shared: DatagramRelay? = try? DatagramRelay(idleLimit: idleLimit)

    /// A relay with its thread running; pairs end after `idleLimit` of silence.
    public init(idleLimit: Duration) throws(SystemError) {
        guard let made = netext_datagram_relay_create() else { throw SystemError("datagram relay", errno: errno) }
        relay = made
        let idle = Int32(clamping: idleLimit.components.seconds * 1_000 + idleLimit.components.attoseconds / 1_000_000_000_000_000)
        let thread = Thread { [self] in
            let capacity = 256
            let done = UnsafeMutablePointer<netext_relay_done>.allocate(capacity: capacity)
            defer { done.deallocate() }
            while true {
                let count = netext_datagram_relay_run(relay, done, Int32(capacity), idle)
                if count < 0 { break }
                for index in 0..<Int(count) {
                    let outcome = done[index]
                    let completion = completions.withLock { $0.removeValue(forKey: outcome.id) }
                    completion?(FlowRelay.Outcome(
                        appToUpstream: Int(outcome.app_to_upstream), upstreamToApp: Int(outcome.upstream_to_app),
                        error: outcome.error == 0 ? nil : SystemError("relay", errno: outcome.error)))
                }
            }
            netext_datagram_relay_destroy(relay)
        }
        thread.name = "netext-datagram-relay"
        thread.start()
    }

    /// Makes a UDP socket connected to `destination` (`mark`: its SO_MARK, set before its route
    /// is chosen; CAP_NET_ADMIN), sends `first` on it, and carries datagrams between it and
    /// `app` (the relay's from now on) until the pair falls idle. `completion` runs on the
    /// relay's thread when it has: keep it short.
    public func relay(app: Int32, connectingTo destination: SocketAddress, mark: UInt32 = 0, first: [UInt8], completion: @escaping @Sendable (FlowRelay.Outcome) -> Void) throws(SystemError) {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        completions.withLock { $0[id] = completion }
        let result = destination.address.withUnsafeBufferPointer { address in
            first.withUnsafeBytes { bytes in
                netext_datagram_relay_add_connect(relay, id, app, destination.isIPv6 ? 6 : 4, address.baseAddress, destination.port, mark, bytes.baseAddress, bytes.count)
            }
        }
        if result < 0 {
            _ = completions.withLock { $0.removeValue(forKey: id) }
            throw SystemError("connect", errno: -result, subject: destination.description)
        }
    }
}
