import NetExtLinux

/// Replies of the DNS stub gathered and sent many per system call (`sendmmsg`): each is copied
/// into a buffer of this batch until `flush()`, which sends them all. Used by one thread at a
/// time (a receiving thread, or one event loop).
final class DNSReplyBatch {
    private let sender: DatagramSender
    /// The replies' bytes, one after another.
    private let bytes: UnsafeMutableRawPointer
    private var used = 0
    /// Room for four of the longest UDP replies (65,535 bytes, RFC 1035 §4.2.1 with EDNS).
    static let byteCapacity = 256 << 10
    static let replyCapacity = 128

    init(socket: UDPSocket) {
        sender = DatagramSender(socket: socket, capacity: Self.replyCapacity, segmentation: false)
        bytes = .allocate(byteCount: Self.byteCapacity, alignment: 16)
    }

    deinit { bytes.deallocate() }

    /// Queues `reply` (a UDP reply: at most 65,535 bytes) for `client`; a full batch is sent first.
    func add(_ reply: [UInt8], to client: SocketAddress) {
        guard !reply.isEmpty else { return }
        if used + reply.count > Self.byteCapacity { flush() }
        let start = bytes + used
        reply.withUnsafeBytes { start.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        used += reply.count
        // A full sender sends what it holds before taking this one (its bytes stay put here).
        sender.add(UnsafeRawBufferPointer(start: start, count: reply.count), key: used, to: client)
    }

    /// Sends every queued reply.
    func flush() {
        sender.flush()
        _ = sender.takeDropped()  // a client that went away: its reply is lost, as a sendto's would be
        used = 0
    }
}
