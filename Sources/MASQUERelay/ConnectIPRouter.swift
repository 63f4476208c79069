import HTTPCapsules
import NetExtCore
import Synchronization

/// connect-ip's (RFC 9484) side of the relay, between the clients' streams and the network: it
/// gives each stream an address from the pools (one per pool, leased while the stream lives),
/// sends a client's packets to the network once they pass `ConnectIPPacketCheck`, and hands a
/// packet from the network to the stream whose address it is for. The network is a closure —
/// `netext-server relay` writes into its TUN interface, a test into memory.
public final class ConnectIPRouter: Sendable {
    /// What the router did, for `/metrics`, the log and tests.
    public struct Counters: Sendable, Hashable {
        public var packetsToNetwork = 0
        public var packetsFromNetwork = 0
        /// Client packets refused by `ConnectIPPacketCheck` or the network's write.
        public var droppedFromClients = 0
        /// Network packets for no leased address, or for a stream that could take no more.
        public var droppedFromNetwork = 0

        public init() {}
    }

    /// One stream's addresses; `release` gives them back.
    public struct Lease: Sendable, Hashable {
        public let id: UInt64
        /// Host prefixes (/32, /128), one per pool.
        public let addresses: [IPPrefix]
    }

    /// The pools clients' addresses come from (an IPv4 one, an IPv6 one, or both).
    public let pools: [IPPrefix]
    private let network: @Sendable (UnsafeRawBufferPointer) -> Bool
    private let state: Mutex<State>
    // Counted per packet on the data path: atomics, not a lock beside the lease table's.
    private let sentCount = Atomic<Int>(0)
    private let deliveredCount = Atomic<Int>(0)
    private let clientDrops = Atomic<Int>(0)
    private let networkDrops = Atomic<Int>(0)

    /// Leases hold at most this many addresses of one pool (a /64 is not walked to its end).
    static let maximumLeasesPerPool = 1 << 16

    private struct State {
        var nextID: UInt64 = 1
        /// Per pool, the host offset the next search starts from.
        var cursors: [UInt64]
        var byAddress: [AddressKey: Entry] = [:]
    }

    private struct Entry {
        let leaseID: UInt64
        let deliver: Deliver
    }

    /// Hands a stream the packets read for it in one batch, in order; returns how many it took
    /// (none when its window is full or it has ended).
    public typealias Deliver = @Sendable (_ packets: [UnsafeRawBufferPointer]) -> Int

    /// An address as a dictionary key without an allocation (IPv4 in `low`, tagged in `high`).
    struct AddressKey: Hashable {
        let high: UInt64
        let low: UInt64

        init?(_ bytes: UnsafeRawBufferPointer) {
            switch bytes.count {
            case 4:
                high = 1 << 63
                low = UInt64(bytes.loadUnaligned(as: UInt32.self).bigEndian)
            case 16:
                high = bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self).bigEndian
                low = bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian
            default:
                return nil
            }
        }

        init?(_ bytes: [UInt8]) {
            guard let key = bytes.withUnsafeBytes({ AddressKey($0) }) else { return nil }
            self = key
        }
    }

    /// `pools` must be canonical prefixes with room for the gateway and clients (IPv4 up to /30,
    /// IPv6 up to /126); `network` sends one packet and says whether it could.
    public init(pools: [IPPrefix], network: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) throws(NetExtError) {
        for pool in pools where pool.length > pool.address.count * 8 - 2 {
            throw NetExtError.invalid("the connect-ip pool \(pool) is too small: it needs room for the relay's address and a client's")
        }
        guard Set(pools.map(\.isIPv6)).count == pools.count else {
            throw NetExtError.invalid("connect-ip takes at most one IPv4 pool and one IPv6 pool")
        }
        self.pools = pools
        self.network = network
        state = Mutex(State(cursors: pools.map { _ in 2 }))
    }

    /// The relay's own address in each pool (its first host), with the pool's length: the TUN
    /// interface's addresses.
    public var gateways: [IPPrefix] {
        pools.map { IPPrefix(address: Self.gateway(in: $0), length: $0.length) }
    }

    /// The relay's own address in `pool`: its first host.
    public static func gateway(in pool: IPPrefix) -> [UInt8] { host(1, in: pool) }

    public var counters: Counters {
        var values = Counters()
        values.packetsToNetwork = sentCount.load(ordering: .relaxed)
        values.packetsFromNetwork = deliveredCount.load(ordering: .relaxed)
        values.droppedFromClients = clientDrops.load(ordering: .relaxed)
        values.droppedFromNetwork = networkDrops.load(ordering: .relaxed)
        return values
    }

    /// Tunnels holding addresses now.
    public var activeLeases: Int { state.withLock { Set($0.byAddress.values.map(\.leaseID)).count } }

    /// Leases one free address of each pool to a stream; `deliver` then gets every packet from
    /// the network for them (on the network's thread, those of one read batch together) and
    /// says how many it took. nil when a pool has no address left.
    public func lease(deliver: @escaping Deliver) -> Lease? {
        state.withLock { state in
            let id = state.nextID
            var addresses: [IPPrefix] = []
            for (index, pool) in pools.enumerated() {
                let hostBits = pool.address.count * 8 - pool.length
                // IPv4 keeps the pool's last address (broadcast) out; offset 0 is the network, 1 the relay.
                let usable = min(hostBits >= 64 ? UInt64.max : (UInt64(1) << hostBits) - (pool.isIPv6 ? 0 : 1), UInt64(Self.maximumLeasesPerPool) + 2)
                var found: [UInt8]?
                var offset = state.cursors[index]
                for _ in 0..<(usable - 2) {
                    if offset >= usable { offset = 2 }
                    let candidate = Self.host(offset, in: pool)
                    offset += 1
                    if let key = AddressKey(candidate), state.byAddress[key] == nil {
                        found = candidate
                        break
                    }
                }
                guard let found else {
                    for address in addresses { if let key = AddressKey(address.address) { state.byAddress[key] = nil } }
                    return nil
                }
                state.cursors[index] = offset
                state.byAddress[AddressKey(found)!] = Entry(leaseID: id, deliver: deliver)
                addresses.append(IPPrefix(address: found, length: found.count * 8))
            }
            state.nextID += 1
            return Lease(id: id, addresses: addresses)
        }
    }

    /// Gives a lease's addresses back (packets for them are dropped from now on).
    public func release(_ lease: Lease) {
        state.withLock { state in
            for address in lease.addresses {
                if let key = AddressKey(address.address), state.byAddress[key]?.leaseID == lease.id { state.byAddress[key] = nil }
            }
        }
    }

    /// A packet read from the network: to the stream its destination is leased to, else dropped.
    public func fromNetwork(_ packet: UnsafeRawBufferPointer) {
        fromNetwork([packet])
    }

    /// Packets read from the network in one batch: each to the stream its destination is leased
    /// to (a stream's packets handed over together, in order, so that they leave in one write),
    /// else dropped. One lookup under the lock for the batch.
    public func fromNetwork(_ packets: [UnsafeRawBufferPointer]) {
        var keys: [AddressKey?] = []
        var lengths: [Int] = []
        keys.reserveCapacity(packets.count)
        lengths.reserveCapacity(packets.count)
        for packet in packets {
            guard packet.count >= 20, let length = IPPacketInfo.length(of: packet) else {
                keys.append(nil)
                lengths.append(0)
                continue
            }
            let (offset, count) = IPPacketInfo.addressLayout(of: packet)
            keys.append(AddressKey(UnsafeRawBufferPointer(rebasing: packet[(offset + count)..<(offset + 2 * count)])))
            lengths.append(length)
        }
        let entries = state.withLock { state in keys.map { $0.flatMap { state.byAddress[$0] } } }
        var batches: [(entry: Entry, packets: [UnsafeRawBufferPointer])] = []
        var dropped = 0
        for (index, entry) in entries.enumerated() {
            guard let entry else {
                dropped += 1
                continue
            }
            let packet = UnsafeRawBufferPointer(rebasing: packets[index][0..<lengths[index]])
            if let at = batches.firstIndex(where: { $0.entry.leaseID == entry.leaseID }) {
                batches[at].packets.append(packet)
            } else {
                batches.append((entry, [packet]))
            }
        }
        var delivered = 0
        for batch in batches {
            let taken = batch.entry.deliver(batch.packets)
            delivered += taken
            dropped += batch.packets.count - taken
        }
        if delivered > 0 { deliveredCount.add(delivered, ordering: .relaxed) }
        if dropped > 0 { networkDrops.add(dropped, ordering: .relaxed) }
    }

    /// A client's packet: checked against its lease, the relay's allowed destinations and the
    /// stream's scope, then sent. Returns why it was dropped, or nil when it was sent.
    @discardableResult
    public func toNetwork(
        _ packet: UnsafeRawBufferPointer, lease: Lease, reach: ConnectIPReach
    ) -> ConnectIPPacketCheck.Drop? {
        if let drop = ConnectIPPacketCheck.verdict(packet, sources: lease.addresses, reach: reach) {
            clientDrops.add(1, ordering: .relaxed)
            return drop
        }
        guard network(packet) else {
            clientDrops.add(1, ordering: .relaxed)
            return .networkRefused
        }
        sentCount.add(1, ordering: .relaxed)
        return nil
    }

    /// The address `offset` hosts into `pool`.
    static func host(_ offset: UInt64, in pool: IPPrefix) -> [UInt8] {
        var bytes = pool.address
        var carry = offset
        var index = bytes.count - 1
        while carry > 0 && index >= 0 {
            let sum = UInt64(bytes[index]) + (carry & 0xff)
            bytes[index] = UInt8(truncatingIfNeeded: sum)
            carry = (carry >> 8) + (sum >> 8)
            index -= 1
        }
        return bytes
    }
}
