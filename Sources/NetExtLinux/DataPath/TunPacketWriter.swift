import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// Writes packets to a TUN descriptor. On a descriptor with offloads, a batch's TCP segments of
/// one flow are first joined (`TCPCoalescer`) and written as one packet with a virtio header, so
/// the kernel's TCP receives them as one; everything else goes out one packet per write.
///
/// Per batch: `add(_:)` each packet (its bytes stay valid and may be modified until `flush()`),
/// then `flush()`.
public final class TunPacketWriter {
    public let fileDescriptor: Int32
    public let hasVirtioHeader: Bool
    private var coalescer = TCPCoalescer()
    private let header = UnsafeMutableRawPointer.allocate(byteCount: VirtioNetHeader.size, alignment: 16)
    private var vectors: [iovec] = Array(repeating: iovec(), count: Int(TCPCoalescer.maximumSegments) + 1)
    /// Writes the kernel refused since the last `takeDropped()` (the packets are lost).
    private var failedWrites = 0

    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        hasVirtioHeader = TunDevice.hasVirtioHeader(fileDescriptor)
        header.initializeMemory(as: UInt8.self, repeating: 0, count: VirtioNetHeader.size)
    }

    deinit { header.deallocate() }

    /// The writes refused since the last call (for the caller's statistics).
    public func takeDropped() -> Int {
        defer { failedWrites = 0 }
        return failedWrites
    }

    /// Queues one IP packet (exactly its bytes).
    @inline(__always)
    public func add(_ packet: UnsafeMutableRawBufferPointer) {
        if hasVirtioHeader {
            coalescer.add(packet)
        } else {
            do { try PacketIO.write(fileDescriptor, UnsafeRawBufferPointer(packet)) } catch { failedWrites += 1 }
        }
    }

    /// Writes everything queued since the last flush.
    public func flush() {
        guard hasVirtioHeader, !coalescer.packets.isEmpty else { return }
        coalescer.finish()
        for group in coalescer.groups {
            (group.count > 1 ? group.header : VirtioNetHeader()).write(to: header)
            vectors[0] = iovec(iov_base: header, iov_len: VirtioNetHeader.size)
            var packetIndex = Int(group.head)
            var vectorCount = 1
            let headerBytes = Int(group.header.headerLength)
            while packetIndex >= 0 {
                let packet = coalescer.packets[packetIndex]
                if vectorCount == 1 {
                    vectors[vectorCount] = iovec(iov_base: packet.baseAddress, iov_len: packet.count)
                } else {
                    // Later segments contribute only their payload.
                    vectors[vectorCount] = iovec(iov_base: packet.baseAddress! + headerBytes, iov_len: packet.count - headerBytes)
                }
                vectorCount += 1
                packetIndex = Int(coalescer.next[packetIndex])
            }
            if !writeVectors(vectorCount) { failedWrites += 1 }
        }
        coalescer.reset()
    }

    private func writeVectors(_ count: Int) -> Bool {
        while true {
            let written = vectors.withUnsafeBufferPointer { Glibc.writev(fileDescriptor, $0.baseAddress, Int32(count)) }
            if written >= 0 { return true }
            switch errno {
            case EINTR: continue
            case EAGAIN: _ = PacketIO.waitWritable(fileDescriptor, milliseconds: 100)
            default: return false
            }
        }
    }
}
