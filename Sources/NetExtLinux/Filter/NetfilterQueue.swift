import CNetExtLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A netfilter queue bound in this network namespace: the kernel hands packets that rules sent
/// to the queue (`NFQUEUE`) to this process and waits for a verdict on each. Spoken directly
/// over nfnetlink (`linux/netfilter/nfnetlink_queue.h`), no library needed.
public final class NetfilterQueue: Sendable {
    /// One queued packet, valid only inside the `receive` callback.
    public struct Packet {
        public var id: UInt32
        /// The packet leaves this machine (output hook) rather than arriving (input hook).
        public var isOutbound: Bool
        public var mark: UInt32
        /// The owning socket's uid and gid, when the packet belongs to a local socket.
        public var owner: (uid: UInt32, gid: UInt32)?
        /// The IP packet (at most the copy range of it).
        public var bytes: UnsafeRawBufferPointer

        public init(id: UInt32, isOutbound: Bool, mark: UInt32, owner: (uid: UInt32, gid: UInt32)?, bytes: UnsafeRawBufferPointer) {
            self.id = id
            self.isOutbound = isOutbound
            self.mark = mark
            self.owner = owner
            self.bytes = bytes
        }
    }

    /// What happens to a queued packet.
    public enum Verdict: Sendable, Hashable {
        case accept
        case drop
        /// Sets the packet's mark and runs the hook's rules again (how a verdict reaches the
        /// conntrack mark without ctnetlink glue: a rule copies the packet mark to the flow).
        case repeatWithMark(UInt32)
    }

    public let number: UInt16
    private let fd: Int32
    private let closed = Atomic<Bool>(false)
    /// Bytes of each packet copied to user space: all of it (a flow whose data the provider reads
    /// needs every byte; only the first packets of other flows are queued at all).
    public static let copyRange: UInt32 = 65_535
    private static let nfAccept: UInt32 = 1, nfDrop: UInt32 = 0, nfRepeat: UInt32 = 4
    private static let localOutHook: UInt8 = 3

    /// Binds queue `number`; `failOpen` makes the kernel accept packets when the queue is full.
    public init(number: UInt16, maxLength: UInt32 = 4_096, failOpen: Bool) throws(SystemError) {
        let result = netext_nfq_open(number, Self.copyRange, maxLength, failOpen ? 1 : 0)
        guard result >= 0 else { throw SystemError("nfqueue bind", errno: -result, subject: "queue \(number)") }
        self.number = number
        self.fd = result
    }

    /// Receives what is queued (blocking up to `timeoutMilliseconds`, 0 = forever) and calls
    /// `handle` for each packet. Returns the number of malformed messages skipped, or throws
    /// when the socket fails (closed, or an error other than a timeout).
    public func receive(into buffer: UnsafeMutableRawBufferPointer, timeoutMilliseconds: Int32, _ handle: (Packet) -> Void) throws(SystemError) -> Int {
        netext_nfq_set_timeout(fd, timeoutMilliseconds)
        let length = netext_nfq_receive(fd, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt(buffer.count))
        if length < 0 {
            let code = Int32(-length)
            if code == EAGAIN || code == EWOULDBLOCK { return 0 }
            throw SystemError("nfqueue receive", errno: code, subject: "queue \(number)")
        }
        var offset: UInt = 0
        var malformed = 0
        var parsed = netext_nfq_packet()
        let base = UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
        while true {
            let outcome = netext_nfq_next(base, UInt(length), &offset, &parsed)
            if outcome == 0 { break }
            if outcome < 0 {
                malformed += 1
                continue
            }
            let bytes = UnsafeRawBufferPointer(start: parsed.payload, count: Int(parsed.payload_length))
            handle(Packet(
                id: parsed.id, isOutbound: parsed.hook == Self.localOutHook, mark: parsed.mark,
                owner: parsed.has_owner != 0 ? (parsed.uid, parsed.gid) : nil, bytes: bytes))
        }
        return malformed
    }

    /// Issues the verdict for packet `id`. Safe from any thread.
    public func setVerdict(_ verdict: Verdict, for id: UInt32) throws(SystemError) {
        let result: Int32
        switch verdict {
        case .accept: result = netext_nfq_verdict(fd, number, id, Self.nfAccept, 0, 0)
        case .drop: result = netext_nfq_verdict(fd, number, id, Self.nfDrop, 0, 0)
        case .repeatWithMark(let mark): result = netext_nfq_verdict(fd, number, id, Self.nfRepeat, 1, mark)
        }
        guard result == 0 else { throw SystemError("nfqueue verdict", errno: -result, subject: "queue \(number)") }
    }

    /// Unbinds the queue (closing the socket); packets still queued are dropped or, with
    /// `--queue-bypass` rules, the kernel lets new ones pass.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    deinit { close() }
}
