import Foundation
import NetExt
import Synchronization

/// A packet flow in memory, for testing providers without a TUN device or root: two ends, the
/// provider's and the system's. What one end writes, the other reads, in order. Each direction
/// holds at most `capacity` packets; more are dropped and counted (as a full TUN queue drops).
///
/// ```swift
/// let (provider, system) = MemoryPacketFlow.pair()
/// try system.writePackets([TunnelPacket(data: ping)])      // "the system routed a packet in"
/// let packets = try await provider.readPackets()            // the provider reads it
/// ```
public final class MemoryPacketFlow: PacketFlow {
    public let interface: String
    public let mtu: Int
    private let inbound: Queue
    private let outbound: Queue

    private init(interface: String, mtu: Int, inbound: Queue, outbound: Queue) {
        self.interface = interface
        self.mtu = mtu
        self.inbound = inbound
        self.outbound = outbound
    }

    /// Two connected ends: `provider` is what a provider gets as its `packetFlow`; `system`
    /// plays the kernel (write what the system routes into the tunnel, read what the provider
    /// delivers).
    public static func pair(interface: String = "netext-test0", mtu: Int = 1400, capacity: Int = 4096) -> (provider: MemoryPacketFlow, system: MemoryPacketFlow) {
        let toProvider = Queue(capacity: capacity)
        let toSystem = Queue(capacity: capacity)
        return (
            MemoryPacketFlow(interface: interface, mtu: mtu, inbound: toProvider, outbound: toSystem),
            MemoryPacketFlow(interface: interface, mtu: mtu, inbound: toSystem, outbound: toProvider))
    }

    /// Packets this end wrote that the other end's queue had no room for.
    public var droppedWrites: Int { outbound.dropped }

    public func readPackets(limit: Int) async throws -> [TunnelPacket] {
        try await inbound.take(limit: max(limit, 1))
    }

    public func writePackets(_ packets: [TunnelPacket]) throws {
        let maximum = maximumPacket
        try outbound.put(packets.filter { !$0.data.isEmpty && $0.data.count <= maximum })
    }

    /// Closes both directions: pending and later reads on either end throw.
    public func close() {
        inbound.close()
        outbound.close()
    }

    /// One direction: a bounded FIFO with at most one waiting reader.
    final class Queue: Sendable {
        private struct State {
            var packets: [TunnelPacket] = []
            var head = 0
            var waiter: CheckedContinuation<Void, Never>?
            var closed = false
            var dropped = 0
        }
        private let state = Mutex(State())
        private let capacity: Int

        init(capacity: Int) { self.capacity = capacity }

        var dropped: Int { state.withLock { $0.dropped } }

        func put(_ packets: [TunnelPacket]) throws {
            let waiter = try state.withLock { state throws(MemoryPacketFlowError) -> CheckedContinuation<Void, Never>? in
                guard !state.closed else { throw MemoryPacketFlowError.closed }
                let room = capacity - (state.packets.count - state.head)
                state.packets.append(contentsOf: packets.prefix(max(room, 0)))
                state.dropped += max(packets.count - max(room, 0), 0)
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        func take(limit: Int) async throws -> [TunnelPacket] {
            while true {
                let taken = try state.withLock { state throws(MemoryPacketFlowError) -> [TunnelPacket]? in
                    if state.head < state.packets.count {
                        let end = min(state.head + limit, state.packets.count)
                        let batch = Array(state.packets[state.head..<end])
                        state.head = end
                        if state.head == state.packets.count {
                            state.packets.removeAll(keepingCapacity: true)
                            state.head = 0
                        }
                        return batch
                    }
                    if state.closed { throw MemoryPacketFlowError.closed }
                    return nil
                }
                if let taken { return taken }
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if state.head < state.packets.count || state.closed { return true }
                        state.waiter?.resume()
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }

        func close() {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.closed = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}

/// Why a memory packet flow refused a read or a write.
public enum MemoryPacketFlowError: Error, Sendable, CustomStringConvertible {
    case closed
    public var description: String { "the packet flow is closed" }
}
