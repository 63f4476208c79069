import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// Sends many datagrams per system call (sendmmsg). Consecutive datagrams to the same
/// destination with the same length (the last may be shorter) form a run handed to the kernel
/// as one buffer with UDP generic segmentation offload (UDP_SEGMENT, Linux 4.18), so a 64 KiB
/// burst of tunnel packets costs one trip through the stack. A path that cannot segment gets the
/// run one datagram at a time.
///
/// Per batch: `add(_:…)` each datagram (its bytes stay valid until `flush()`), then `flush()`.
public final class DatagramSender {
    public let socket: UDPSocket
    public let usesSegmentation: Bool
    public let capacity: Int
    private let entries: UnsafeMutablePointer<netext_outgoing>
    private let vectors: UnsafeMutablePointer<iovec>
    private let destinations: UnsafeMutablePointer<sockaddr_storage>
    private var entryCount = 0
    private var vectorCount = 0
    private var runKey = -1
    private var runSize = 0
    private var runBytes = 0
    private var runOpen = false
    /// Datagrams the kernel refused since the last `takeDropped()` (lost).
    private var unsent = 0

    /// The most datagrams in one run, and the most bytes (a run is one UDP GSO buffer).
    static let runSegments = 64
    static let runByteLimit = 65_000

    public init(socket: UDPSocket, capacity: Int = 256, segmentation: Bool = true) {
        self.socket = socket
        self.capacity = capacity
        usesSegmentation = segmentation && netext_udp_supports_gso(socket.fd) == 1
        entries = .allocate(capacity: capacity)
        vectors = .allocate(capacity: capacity)
        destinations = .allocate(capacity: capacity)
    }

    deinit {
        entries.deallocate()
        vectors.deallocate()
        destinations.deallocate()
    }

    /// Queues one datagram. `key` identifies the destination (equal keys = equal `to`/`from`);
    /// `to` is nil on a connected socket.
    public func add(_ datagram: UnsafeRawBufferPointer, key: Int = 0, to destination: SocketAddress? = nil, from source: LocalAddress? = nil) {
        if vectorCount == capacity || entryCount == capacity { flush() }
        vectors[vectorCount] = iovec(iov_base: UnsafeMutableRawPointer(mutating: datagram.baseAddress), iov_len: datagram.count)
        vectorCount += 1
        if usesSegmentation, runOpen, key == runKey, datagram.count <= runSize, runBytes + datagram.count <= Self.runByteLimit,
           Int(entries[entryCount - 1].iov_count) < Self.runSegments {
            entries[entryCount - 1].iov_count += 1
            entries[entryCount - 1].segment_size = UInt16(runSize)
            runBytes += datagram.count
            if datagram.count < runSize { runOpen = false }  // only the last may be shorter
            return
        }
        var entry = netext_outgoing()
        entry.iov = UnsafePointer(vectors + (vectorCount - 1))
        entry.iov_count = 1
        entry.segment_size = 0
        if let destination {
            let target = socket.isIPv6 && !destination.isIPv6
                ? SocketAddress(address: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] + destination.address, port: destination.port) : destination
            let length = target.withSockaddr { address, length in
                UnsafeMutableRawPointer(destinations + entryCount).copyMemory(from: address, byteCount: Int(length))
                return length
            }
            entry.to = UnsafePointer(destinations + entryCount)
            entry.to_length = length
        }
        if let source { entry.from = source.raw }
        entries[entryCount] = entry
        entryCount += 1
        runKey = key
        runSize = datagram.count
        runBytes = datagram.count
        runOpen = true
    }

    /// The datagrams refused since the last call (for the caller's statistics).
    public func takeDropped() -> Int {
        defer { unsent = 0 }
        return unsent
    }

    /// Sends everything queued.
    public func flush() {
        guard entryCount > 0 else { return }
        unsent += Int(netext_udp_send_batch(socket.fd, entries, Int32(entryCount)))
        entryCount = 0
        vectorCount = 0
        runOpen = false
    }
}

/// Receives many datagrams per system call (recvmmsg) into buffers allocated once. With UDP
/// generic receive offload (UDP_GRO, Linux 5.0) the kernel may put several datagrams of one flow
/// into one buffer; `segmentSize(_:)` says how to split it.
public final class DatagramReceiver {
    public let socket: UDPSocket
    public let bufferSize = 65_536
    public let capacity: Int
    private let storage: UnsafeMutableRawPointer
    private let incoming: UnsafeMutablePointer<netext_incoming>

    public init(socket: UDPSocket, capacity: Int = 32) {
        self.socket = socket
        self.capacity = capacity
        _ = netext_udp_enable_gro(socket.fd)  // without it, one datagram per buffer
        storage = .allocate(byteCount: capacity * bufferSize, alignment: 64)
        incoming = .allocate(capacity: capacity)
        incoming.initialize(repeating: netext_incoming(), count: capacity)
    }

    deinit {
        storage.deallocate()
        incoming.deallocate()
    }

    /// Blocks until datagrams arrive; returns how many buffers were filled, or nil once the
    /// socket is closed. A receive timeout on the socket returns 0.
    public func receive() throws(SystemError) -> Int? {
        while true {
            let count = netext_udp_receive_batch(socket.fd, storage.assumingMemoryBound(to: UInt8.self), UInt(bufferSize), Int32(capacity), incoming)
            if socket.isClosed { return nil }
            if count >= 0 { return Int(count) }
            switch -count {
            case EINTR: continue
            case EAGAIN: return 0
            default: throw SystemError("recvmmsg", errno: -count)
            }
        }
    }

    /// Buffer `index`'s bytes (one datagram, or several of `segmentSize` bytes each but the last).
    @inline(__always)
    public func buffer(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + index * bufferSize, count: incoming[index].length)
    }

    /// The size of each datagram in buffer `index`, or its whole length.
    @inline(__always)
    public func segmentSize(_ index: Int) -> Int {
        let size = Int(incoming[index].segment_size)
        return size > 0 ? size : incoming[index].length
    }

    /// Calls `body` for each datagram of the first `filled` buffers (coalesced buffers split at
    /// their segment size), in order.
    @inline(__always)
    public func forEachDatagram(in filled: Int, _ body: (_ buffer: Int, _ datagram: UnsafeMutableRawBufferPointer) -> Void) {
        for index in 0..<filled {
            let buffer = buffer(index)
            let size = segmentSize(index)
            var offset = 0
            while offset < buffer.count {
                let end = min(offset + size, buffer.count)
                body(index, UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<end]))
                offset = end
            }
        }
    }

    /// Who sent buffer `index`.
    public func source(_ index: Int) -> SocketAddress? { SocketAddress.from(incoming[index].from) }

    /// The local address buffer `index` arrived at (with `reportDestinationAddresses`).
    public func destination(_ index: Int) -> LocalAddress? { LocalAddress(incoming[index].local) }
}
