import Foundation
import NetExtLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The tunnel's packets (Apple's `NEPacketTunnelFlow`): what the system routes into the tunnel is
/// read here, and what the provider writes is delivered to the system. Backed by the TUN
/// descriptor netextd passed to the provider (with offloads: see `TunDevice`).
///
/// Two ways to use it: `readPackets()`/`writePackets(_:)` (async, one batch of ordinary IP
/// packets per call), or, for a data-plane thread of its own, `makeReader()`/`makeWriter()`,
/// which reuse their buffers, split the kernel's TCP super-packets and join TCP segments again
/// on the way back.
public final class PacketFlow: Sendable {
    /// One IP packet with its protocol family (`AF_INET` or `AF_INET6`), from the version nibble.
    public struct Packet: Sendable, Hashable {
        public var data: [UInt8]
        public var protocolFamily: Int32
        public init(data: [UInt8], protocolFamily: Int32? = nil) {
            self.data = data
            self.protocolFamily = protocolFamily ?? ((data.first ?? 0) >> 4 == 6 ? AF_INET6 : AF_INET)
        }
    }

    public let fileDescriptor: Int32
    public let interface: String
    public let mtu: Int
    private let closed = Mutex(false)
    private let reading: Mutex<(reader: TunPacketReader, batch: PacketBatch)?> = Mutex(nil)
    private let writing: Mutex<(writer: TunPacketWriter, batch: PacketBatch)?> = Mutex(nil)

    init(fileDescriptor: Int32, interface: String, mtu: Int) {
        self.fileDescriptor = fileDescriptor
        self.interface = interface
        self.mtu = mtu
    }

    /// The largest packet the flow carries (the interface's MTU, at least IPv6's 1280).
    public var maximumPacket: Int { max(mtu > 0 ? mtu : 1500, 1280) }

    /// A reader for a data-plane thread (one reader per thread).
    public func makeReader() -> TunPacketReader { TunPacketReader(fileDescriptor: fileDescriptor) }

    /// A writer for a data-plane thread (one writer per thread).
    public func makeWriter() -> TunPacketWriter { TunPacketWriter(fileDescriptor: fileDescriptor) }

    /// Waits for packets and returns the ones available now (at most `limit`), on a thread of
    /// its own so the caller's executor never blocks.
    public func readPackets(limit: Int = 64) async throws -> [Packet] {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    let packets = try self.reading.withLock { state throws -> [Packet] in
                        if state == nil {
                            state = (self.makeReader(), PacketBatch(capacity: max(limit, 128), maximumPacket: self.maximumPacket, headroom: 0, tailroom: 0))
                        }
                        let (reader, batch) = state!
                        batch.removeAll()
                        while batch.count == 0 {
                            _ = try reader.fill(batch, waitMilliseconds: 1000)
                            if self.closed.withLock({ $0 }) { break }
                        }
                        return (0..<batch.count).map { Packet(data: Array(UnsafeRawBufferPointer(batch.packet($0)))) }
                    }
                    continuation.resume(returning: packets)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Delivers packets to the system.
    public func writePackets(_ packets: [Packet]) throws {
        writing.withLock { state in
            if state == nil {
                state = (makeWriter(), PacketBatch(capacity: 128, maximumPacket: maximumPacket, headroom: 0, tailroom: 0))
            }
            let (writer, batch) = state!
            var next = 0
            while next < packets.count {
                // Copy a batch's worth into memory that stays put until the flush.
                batch.removeAll()
                while next < packets.count, batch.freeSlots > 0 {
                    let data = packets[next].data
                    next += 1
                    guard !data.isEmpty, let destination = batch.append(length: data.count) else { continue }  // empty or larger than the MTU: dropped
                    data.withUnsafeBytes { destination.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                }
                for index in 0..<batch.count { writer.add(batch.packet(index)) }
                writer.flush()
            }
        }
    }

    /// Closes the descriptor (the interface goes away when netextd closes its copy too).
    public func close() {
        let wasClosed = closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        if !wasClosed { _ = Glibc.close(fileDescriptor) }
    }
}
