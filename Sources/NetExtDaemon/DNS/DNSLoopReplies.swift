import NIOCore
import NIOPosix
import NetExtLinux

/// The DNS stub's replies sent from the event loops that hold the encrypted servers'
/// connections: the answers of one read from a server (many, under load) are gathered and leave
/// together at the end of the loop's turn, in one `sendmmsg`, rather than one `sendto` each.
final class DNSLoopReplies: Sendable {
    private let socket: UDPSocket
    private let loops: [LoopBatch]

    /// One batch for each loop of the process's shared group (the connections' loops).
    init(socket: UDPSocket) {
        self.socket = socket
        loops = MultiThreadedEventLoopGroup.singleton.makeIterator().map { LoopBatch(loop: $0, batch: DNSReplyBatch(socket: socket)) }
    }

    /// Sends `reply` to `client`: on one of the loops, with that loop's batch; elsewhere at once.
    func send(_ reply: [UInt8], to client: NetExtLinux.SocketAddress) {
        for batch in loops where batch.loop.inEventLoop { return batch.add(reply, to: client) }
        try? reply.withUnsafeBytes { try socket.send($0, to: client) }
    }

    private final class LoopBatch: @unchecked Sendable {
        // @unchecked: `batch` and `flushPending` are touched only on `loop`.
        let loop: any EventLoop
        private let batch: DNSReplyBatch
        private var flushPending = false

        init(loop: any EventLoop, batch: DNSReplyBatch) {
            self.loop = loop
            self.batch = batch
        }

        func add(_ reply: [UInt8], to client: NetExtLinux.SocketAddress) {
            batch.add(reply, to: client)
            guard !flushPending else { return }
            flushPending = true
            // Runs after the reads and tasks already queued: everything answered until then.
            loop.execute { [self] in
                flushPending = false
                batch.flush()
            }
        }
    }
}
