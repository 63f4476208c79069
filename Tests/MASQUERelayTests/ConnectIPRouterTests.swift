import HTTPCapsules
@testable import MASQUERelay
import NetExtCore
import Synchronization
import Testing

@Suite("connect-ip at the relay: leases, packet checks, routes (RFC 9484 §4.7, §7)")
struct ConnectIPRouterTests {
    /// The router's network in memory: what it was given.
    final class Network: Sendable {
        let sent = Mutex<[[UInt8]]>([])
        let accepts: Bool
        init(accepts: Bool = true) { self.accepts = accepts }
        func send(_ packet: UnsafeRawBufferPointer) -> Bool {
            sent.withLock { $0.append(Array(packet)) }
            return accepts
        }
    }

    final class Inbox: Sendable {
        let packets = Mutex<[[UInt8]]>([])
        /// Deliveries (one per batch handed over), each its packets.
        let batches = Mutex<[Int]>([])
        func take(_ batch: [UnsafeRawBufferPointer]) -> Int {
            packets.withLock { $0 += batch.map { Array($0) } }
            batches.withLock { $0.append(batch.count) }
            return batch.count
        }
    }

    static func router(_ pools: [String], network: Network = Network()) throws -> ConnectIPRouter {
        try ConnectIPRouter(pools: pools.map { try IPPrefix($0) }) { network.send($0) }
    }

    @Test("leases start after the relay's own address, one a family, and come back when released; a /30 holds one client")
    func leases() throws {
        let router = try Self.router(["10.77.0.0/24", "fd77::/64"])
        #expect(router.gateways == [try IPPrefix("10.77.0.1/24", allowHostBits: true), try IPPrefix("fd77::1/64", allowHostBits: true)])
        let first = try #require(router.lease { $0.count })
        let second = try #require(router.lease { $0.count })
        #expect(first.addresses.map(\.description) == ["10.77.0.2/32", "fd77::2/128"])
        #expect(second.addresses.map(\.description) == ["10.77.0.3/32", "fd77::3/128"])
        #expect(first.id != second.id)

        let small = try Self.router(["192.0.2.0/30"])
        let only = try #require(small.lease { $0.count })
        #expect(only.addresses.map(\.description) == ["192.0.2.2/32"])
        #expect(small.lease { $0.count } == nil, "192.0.2.3 is the broadcast address: a /30 has room for one client")
        small.release(only)
        #expect(small.lease { $0.count }?.addresses.map(\.description) == ["192.0.2.2/32"])
    }

    @Test("a full pool of one family fails the lease whole: the other family's address it picked is not kept")
    func exhaustionIsWhole() throws {
        // The IPv6 pool is walked first: the second lease picks fd77::3, then finds no IPv4 address.
        let router = try Self.router(["fd77::/64", "192.0.2.0/30"])
        let first = try #require(router.lease { $0.count })
        #expect(first.addresses.map(\.description) == ["fd77::2/128", "192.0.2.2/32"])
        #expect(router.lease { $0.count } == nil)
        ConnectIPPackets.udp6(from: try IPPrefix("fd20::5").address, to: try IPPrefix("fd77::3").address).withUnsafeBytes { router.fromNetwork($0) }
        #expect(router.counters.droppedFromNetwork == 1, "nobody holds fd77::3")
    }

    @Test("pools that cannot work are refused with a sentence: too small, or two of one family")
    func badPools() {
        #expect(throws: NetExtError.self) { try Self.router(["192.0.2.0/31"]) }
        #expect(throws: NetExtError.self) { try Self.router(["192.0.2.0/24", "198.51.100.0/24"]) }
        do { _ = try Self.router(["192.0.2.0/31"]) } catch { #expect("\(error)".contains("too small")) }
    }

    @Test("a client's packet goes out only from its own address, to the allowed destinations, within its scope, whole")
    func packetChecks() throws {
        let network = Network()
        let router = try Self.router(["10.77.0.0/24"], network: network)
        let lease = try #require(router.lease { $0.count })
        let mine: [UInt8] = [10, 77, 0, 2]
        let reach = ConnectIPReach(allowed: [try IPPrefix("10.20.0.0/24")], scope: ConnectIPScope(ipProtocol: 1))
        func send(_ packet: [UInt8], scope: ConnectIPReach? = nil) -> ConnectIPPacketCheck.Drop? {
            packet.withUnsafeBytes { router.toNetwork($0, lease: lease, reach: scope ?? reach) }
        }
        let good = ConnectIPPackets.icmp(from: mine, to: [10, 20, 0, 5])
        #expect(send(good) == nil)
        #expect(send(ConnectIPPackets.icmp(from: [10, 77, 0, 3], to: [10, 20, 0, 5])) == .spoofedSource)
        #expect(send(ConnectIPPackets.icmp(from: mine, to: [10, 30, 0, 7])) == .outOfScope)
        let udpScope = ConnectIPReach(allowed: reach.allowed, scope: ConnectIPScope(ipProtocol: 17))
        #expect(send(good, scope: udpScope) == .outOfScope)
        #expect(send(Array(good.dropLast())) == .malformed, "the header's length is more than the datagram")
        #expect(send(good + [0]) == .malformed, "a datagram is one packet, not a packet and more")
        #expect(send([0x45, 0, 0]) == .malformed)
        #expect(network.sent.withLock { $0 } == [good])
        #expect(router.counters.packetsToNetwork == 1 && router.counters.droppedFromClients == 6)

        let refusing = try Self.router(["10.77.0.0/24"], network: Network(accepts: false))
        let other = try #require(refusing.lease { $0.count })
        #expect(good.withUnsafeBytes { refusing.toNetwork($0, lease: other, reach: reach) } == .networkRefused)
    }

    @Test("a batch read from the network: each stream is handed its packets together and in order (one delivery each), the rest dropped and counted")
    func fromNetworkInBatches() throws {
        let router = try Self.router(["10.77.0.0/24"])
        let (a, b) = (Inbox(), Inbox())
        _ = try #require(router.lease { a.take($0) })
        _ = try #require(router.lease { b.take($0) })
        let packets = [
            ConnectIPPackets.icmp(type: 0, from: [10, 20, 0, 5], to: [10, 77, 0, 2], sequence: 1),
            ConnectIPPackets.icmp(type: 0, from: [10, 20, 0, 5], to: [10, 77, 0, 3], sequence: 1),
            ConnectIPPackets.icmp(type: 0, from: [10, 20, 0, 5], to: [10, 77, 0, 9]),
            ConnectIPPackets.icmp(type: 0, from: [10, 20, 0, 5], to: [10, 77, 0, 2], sequence: 2),
            [0x45, 1, 2],
            ConnectIPPackets.icmp(type: 0, from: [10, 20, 0, 5], to: [10, 77, 0, 2], sequence: 3),
        ]
        let buffers = packets.map { packet in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: packet.count, alignment: 1)
            buffer.copyBytes(from: packet)
            return UnsafeRawBufferPointer(buffer)
        }
        defer { buffers.forEach { $0.deallocate() } }
        router.fromNetwork(buffers)
        #expect(a.packets.withLock { $0 } == [packets[0], packets[3], packets[5]])
        #expect(a.batches.withLock { $0 } == [3], "one delivery for the stream's three")
        #expect(b.packets.withLock { $0 } == [packets[1]] && b.batches.withLock { $0 } == [1])
        #expect(router.counters.packetsFromNetwork == 4 && router.counters.droppedFromNetwork == 2)
        // A stream that takes none of a batch (its window full): all of them counted as dropped.
        let full = try Self.router(["10.77.0.0/24"])
        _ = try #require(full.lease { _ in 0 })
        full.fromNetwork([buffers[0], buffers[3]])
        #expect(full.counters.packetsFromNetwork == 0 && full.counters.droppedFromNetwork == 2)
    }

    @Test("a packet from the network goes to the stream whose address it is for, and only there; others are dropped and counted")
    func fromNetwork() throws {
        let router = try Self.router(["10.77.0.0/24", "fd77::/64"])
        let (a, b) = (Inbox(), Inbox())
        let leaseA = try #require(router.lease { a.take($0) })
        _ = try #require(router.lease { b.take($0) })
        let toA = ConnectIPPackets.icmp(type: 0, from: [10, 20, 0, 5], to: [10, 77, 0, 2])
        let toB6 = ConnectIPPackets.udp6(from: try IPPrefix("fd20::5").address, to: try IPPrefix("fd77::3").address)
        let toNobody = ConnectIPPackets.icmp(type: 0, from: [10, 20, 0, 5], to: [10, 77, 0, 9])
        // A buffer longer than its packet (a reader's padding): only the packet is delivered.
        (toA + [0xEE, 0xEE]).withUnsafeBytes { router.fromNetwork($0) }
        toB6.withUnsafeBytes { router.fromNetwork($0) }
        toNobody.withUnsafeBytes { router.fromNetwork($0) }
        [UInt8]([0x45, 1, 2]).withUnsafeBytes { router.fromNetwork($0) }
        #expect(a.packets.withLock { $0 } == [toA])
        #expect(b.packets.withLock { $0 } == [toB6])
        router.release(leaseA)
        toA.withUnsafeBytes { router.fromNetwork($0) }
        #expect(a.packets.withLock { $0.count } == 1)
        #expect(router.counters.packetsFromNetwork == 2 && router.counters.droppedFromNetwork == 3)
    }

    @Test("the advertised routes: the allowed prefixes within the scope, merged where they overlap or touch, IPv4 before IPv6, for the scope's protocol")
    func routes() throws {
        let allowed = try ["10.20.1.0/24", "fd20::/64", "10.20.0.0/24", "10.20.0.128/25", "192.0.2.0/24"].map { try IPPrefix($0) }
        let all = ConnectIPReach(allowed: allowed, scope: ConnectIPScope()).routes(addressSizes: [4, 16])
        #expect(all == [
            IPAddressRange(version: 4, start: [10, 20, 0, 0], end: [10, 20, 1, 255]),
            IPAddressRange(version: 4, start: [192, 0, 2, 0], end: [192, 0, 2, 255]),
            IPAddressRange(version: 6, start: try IPPrefix("fd20::").address, end: try IPPrefix("fd20::ffff:ffff:ffff:ffff").address),
        ])
        // The routes encode as a ROUTE_ADVERTISEMENT the codec reads back (its order rules hold).
        let capsule = IPProxyingCapsule.routeAdvertisement(all).capsule
        #expect(try IPProxyingCapsule(capsule) == .routeAdvertisement(all))

        let narrow = ConnectIPReach(allowed: allowed, scope: ConnectIPScope(target: .prefix(try IPPrefix("10.20.0.64/26")), ipProtocol: 17))
        #expect(narrow.routes(addressSizes: [4, 16]) == [IPAddressRange(version: 4, start: [10, 20, 0, 64], end: [10, 20, 0, 127], ipProtocol: 17)])
        #expect(ConnectIPReach(allowed: allowed, scope: ConnectIPScope()).routes(addressSizes: [16]).count == 1)
        #expect(ConnectIPReach(allowed: allowed, scope: ConnectIPScope(target: .prefix(try IPPrefix("10.30.0.0/16")))).routes(addressSizes: [4]).isEmpty)
        let everything = ConnectIPReach(allowed: [try IPPrefix("0.0.0.0/0")], scope: ConnectIPScope()).routes(addressSizes: [4])
        #expect(everything == [IPAddressRange(version: 4, start: [0, 0, 0, 0], end: [255, 255, 255, 255])])
    }
}
