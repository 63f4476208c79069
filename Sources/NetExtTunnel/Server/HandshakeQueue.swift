import Dispatch
import NetExtLinux
import Synchronization

/// Initiations that passed mac1, waiting for the handshake threads. Bounded: when a lane is full
/// new initiations are dropped (and counted) instead of queuing work without end, and transport
/// data never waits behind a handshake — the receive thread only checks mac1 and enqueues.
///
/// Two lanes: initiations that carry a mac2 (a cookie, or what claims to be one) are taken before
/// those that carry none. A flood of initiations without cookies — the cheap flood, which anyone
/// who knows the server's public key can send — then cannot delay a client that has obtained a
/// cookie and retries with it; junk in the cookie lane is refused with one MAC each.
final class HandshakeQueue: Sendable {
    struct Item: Sendable {
        var message: [UInt8]
        var source: SocketAddress
        var local: LocalAddress?
    }

    /// WireGuard's bound on queued incoming handshakes (the lane without cookies).
    static let standardCapacity = 4096
    /// The lane for initiations that carry a mac2.
    static let standardCookieCapacity = 1024

    /// The bound of the lane without cookies (the one the load signal watches).
    let capacity: Int
    private let lanes: Mutex<Lanes>
    private let ready = DispatchSemaphore(value: 0)

    private struct Lanes: ~Copyable {
        var plain: Ring
        var withCookie: Ring
    }

    private struct Ring: ~Copyable {
        var items: [Item?]
        var head = 0
        var count = 0

        init(capacity: Int) { items = Array(repeating: nil, count: max(1, capacity)) }

        mutating func push(_ item: Item) -> Bool {
            guard count < items.count else { return false }
            items[(head + count) % items.count] = item
            count += 1
            return true
        }

        mutating func pop() -> Item? {
            guard count > 0 else { return nil }
            let item = items[head]
            items[head] = nil
            head = (head + 1) % items.count
            count -= 1
            return item
        }
    }

    init(capacity: Int = HandshakeQueue.standardCapacity, cookieCapacity: Int = HandshakeQueue.standardCookieCapacity) {
        self.capacity = max(1, capacity)
        lanes = Mutex(Lanes(plain: Ring(capacity: capacity), withCookie: Ring(capacity: cookieCapacity)))
    }

    /// Adds an item to the lane its `carriesCookie` names; false (and nothing added) when that
    /// lane is full.
    func push(_ item: Item, carriesCookie: Bool = false) -> Bool {
        let added = lanes.withLock { lanes in carriesCookie ? lanes.withCookie.push(item) : lanes.plain.push(item) }
        if added { ready.signal() }
        return added
    }

    /// Items waiting now, both lanes.
    var count: Int { lanes.withLock { $0.plain.count + $0.withCookie.count } }

    /// The oldest item of the cookie lane, else of the other, waiting at most `waitMilliseconds`
    /// for one; nil if none came.
    func pop(waitMilliseconds: Int) -> Item? {
        guard ready.wait(timeout: .now() + .milliseconds(waitMilliseconds)) == .success else { return nil }
        return lanes.withLock { lanes in lanes.withCookie.pop() ?? lanes.plain.pop() }
    }
}
