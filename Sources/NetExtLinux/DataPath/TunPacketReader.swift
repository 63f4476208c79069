import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// Reads packets from a TUN descriptor into a `PacketBatch`, several per wake-up. On a
/// descriptor with offloads it splits the kernel's TCP super-packets into MTU-sized packets with
/// complete checksums (`SegmentationOffload`); otherwise each read is one packet.
///
/// Sets the descriptor non-blocking (reads drain it until it is empty, then wait in poll).
public final class TunPacketReader {
    public let fileDescriptor: Int32
    public let hasVirtioHeader: Bool
    private let scratch: UnsafeMutableRawBufferPointer
    /// Packets dropped since the last `takeDropped()`: what the kernel handed over that could not
    /// be turned into packets, and segments that did not fit the batch.
    private var dropped = 0

    /// Keep reading while the batch can take at least this many more packets.
    static let roomForOneRead = 64

    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        hasVirtioHeader = TunDevice.hasVirtioHeader(fileDescriptor)
        scratch = .allocate(byteCount: VirtioNetHeader.size + 65_536, alignment: 64)
        let flags = fcntl(fileDescriptor, F_GETFL)
        if flags >= 0 { _ = fcntl(fileDescriptor, F_SETFL, flags | O_NONBLOCK) }
    }

    deinit { scratch.deallocate() }

    /// The packets dropped since the last call (for the caller's statistics).
    public func takeDropped() -> Int {
        defer { dropped = 0 }
        return dropped
    }

    /// Waits up to `milliseconds` for the first packet (0: not at all), then reads until the
    /// descriptor is empty or the batch is nearly full. Returns how many packets were added.
    /// Throws if the descriptor fails (closed interface).
    public func fill(_ batch: PacketBatch, waitMilliseconds: Int32) throws(SystemError) -> Int {
        let before = batch.count
        var waited = false
        while batch.freeSlots >= Self.roomForOneRead || (batch.count == before && batch.freeSlots > 0) {
            let count = hasVirtioHeader
                ? Glibc.read(fileDescriptor, scratch.baseAddress, scratch.count)
                : readPlain(into: batch)
            if count > 0 {
                if hasVirtioHeader { splitInto(batch, count: count) }
                continue
            }
            if count == 0 { throw SystemError("read", errno: EPIPE) }
            switch errno {
            case EINTR: continue
            case EAGAIN:
                if batch.count > before || waited { return batch.count - before }
                guard waitMilliseconds != 0, PacketIO.waitReadable(fileDescriptor, milliseconds: waitMilliseconds) else { return 0 }
                waited = true
            default:
                throw SystemError("read", errno: errno)
            }
        }
        return batch.count - before
    }

    private func readPlain(into batch: PacketBatch) -> Int {
        guard let destination = batch.append(length: batch.maximumPacket) else { return 0 }
        let count = Glibc.read(fileDescriptor, destination, batch.maximumPacket)
        let saved = errno
        batch.truncateLast(to: max(count, 0))
        if count <= 0 { batch.dropLast() }
        errno = saved
        return count
    }

    private func splitInto(_ batch: PacketBatch, count: Int) {
        guard count > VirtioNetHeader.size else {
            dropped += 1
            return
        }
        let header = VirtioNetHeader(reading: scratch.baseAddress!)
        let packet = UnsafeMutableRawBufferPointer(rebasing: scratch[VirtioNetHeader.size..<count])
        do {
            var produced = 0
            let written = try SegmentationOffload.split(packet, header: header) { length in
                produced += 1
                return batch.append(length: length)
            }
            dropped += produced - written
        } catch {
            dropped += 1
        }
    }
}

extension PacketBatch {
    /// Shortens the last packet (after reading into a slot of the largest size).
    func truncateLast(to length: Int) { lengths[count - 1] = length }
    /// Removes the last packet.
    func dropLast() { count -= 1 }
}
