import Foundation
import NetExtLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The packet flow of a real tunnel: the TUN descriptor netextd passed to the provider (with
/// offloads: see `TunDevice`). Besides `readPackets()`/`writePackets(_:)`, a data-plane thread of
/// the package's own providers takes a reader and a writer (`makeReader()`/`makeWriter()`),
/// which reuse their buffers, split the kernel's TCP super-packets and join TCP segments again
/// on the way back.
public final class TunPacketFlow: PacketFlow {
    /// The TUN device's descriptor, which netextd passed; the flow owns it and closes it.
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

    /// A reader for a data-plane thread (one reader per thread).
    package func makeReader() -> TunPacketReader { TunPacketReader(fileDescriptor: fileDescriptor) }

    /// A writer for a data-plane thread (one writer per thread).
    package func makeWriter() -> TunPacketWriter { TunPacketWriter(fileDescriptor: fileDescriptor) }

    /// Waits for packets and returns the ones available now (at most `limit`), on a thread of
    /// its own so the caller's executor never blocks.
    public func readPackets(limit: Int) async throws -> [TunnelPacket] {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    let packets = try self.reading.withLock { state throws -> [TunnelPacket] in
                        if state == nil {
                            state = (self.makeReader(), PacketBatch(capacity: max(limit, 128), maximumPacket: self.maximumPacket, headroom: 0, tailroom: 0))
                        }
                        let (reader, batch) = state!
                        batch.removeAll()
                        while batch.count == 0 {
                            _ = try reader.fill(batch, waitMilliseconds: 1000)
                            if self.closed.withLock({ $0 }) { break }
                        }
                        return (0..<batch.count).map { TunnelPacket(data: Array(UnsafeRawBufferPointer(batch.packet($0)))) }
                    }
                    continuation.resume(returning: packets)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Delivers packets to the system.
    public func writePackets(_ packets: [TunnelPacket]) throws {
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
