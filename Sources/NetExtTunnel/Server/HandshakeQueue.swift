import Dispatch
import NetExtLinux
import Synchronization

/// Initiations that passed mac1, waiting for the handshake thread. Bounded: when it is full new
/// initiations are dropped (and counted) instead of queuing work without end, and transport data
/// never waits behind a handshake — the receive thread only checks mac1 and enqueues.
final class HandshakeQueue: Sendable {
    struct Item: Sendable {
        var message: [UInt8]
        var source: SocketAddress
        var local: LocalAddress?
    }

    /// WireGuard's bound on queued incoming handshakes.
    static let standardCapacity = 4096

    let capacity: Int
    private let ring: Mutex<Ring>
    private let ready = DispatchSemaphore(value: 0)

    private struct Ring: ~Copyable {
        var items: [Item?]
        var head = 0
        var count = 0
    }

    init(capacity: Int = HandshakeQueue.standardCapacity) {
        self.capacity = max(1, capacity)
        ring = Mutex(Ring(items: Array(repeating: nil, count: max(1, capacity))))
    }

    /// Adds an item; false (and nothing added) when the queue is full.
    func push(_ item: Item) -> Bool {
        let added = ring.withLock { ring in
            guard ring.count < capacity else { return false }
            ring.items[(ring.head + ring.count) % capacity] = item
            ring.count += 1
            return true
        }
        if added { ready.signal() }
        return added
    }

    /// Items waiting now.
    var count: Int { ring.withLock { $0.count } }

    /// The oldest item, waiting at most `waitMilliseconds` for one; nil if none came.
    func pop(waitMilliseconds: Int) -> Item? {
        guard ready.wait(timeout: .now() + .milliseconds(waitMilliseconds)) == .success else { return nil }
        return ring.withLock { ring in
            guard ring.count > 0 else { return nil }
            let item = ring.items[ring.head]
            ring.items[ring.head] = nil
            ring.head = (ring.head + 1) % capacity
            ring.count -= 1
            return item
        }
    }
}
