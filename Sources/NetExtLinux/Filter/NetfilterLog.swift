import CNetExtLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A netfilter log group bound in this network namespace (nfnetlink_log): the kernel copies
/// packets that rules send to the group (`NFLOG`) to this process without holding them. netextd
/// reads DNS answers this way, to know which host name an address was looked up as.
public final class NetfilterLog: Sendable {
    public let group: UInt16
    private let fd: Int32
    private let closed = Atomic<Bool>(false)

    /// Binds log group `group`, copying up to `copyRange` bytes of each packet. Reads never block.
    public init(group: UInt16, copyRange: UInt32 = 8_192) throws(SystemError) {
        let result = netext_nflog_open(group, copyRange)
        guard result >= 0 else { throw SystemError("nflog bind", errno: -result, subject: "group \(group)") }
        self.group = group
        self.fd = result
    }

    /// Reads every logged packet waiting and calls `handle` with its IP packet; returns the number
    /// of malformed messages skipped. Returns at once when nothing waits.
    @discardableResult
    public func drain(into buffer: UnsafeMutableRawBufferPointer, _ handle: (UnsafeRawBufferPointer) -> Void) -> Int {
        var malformed = 0
        // Bounded: at most 64 datagrams a call, so a flood cannot starve the caller.
        for _ in 0..<64 {
            let length = netext_nfq_receive(fd, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt(buffer.count))
            if length <= 0 { break }
            var offset: UInt = 0
            var payload: UnsafePointer<UInt8>?
            var payloadLength: UInt32 = 0
            var hook: UInt8 = 0
            let base = UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
            while true {
                let outcome = netext_nflog_next(base, UInt(length), &offset, &payload, &payloadLength, &hook)
                if outcome == 0 { break }
                if outcome < 0 {
                    malformed += 1
                    continue
                }
                handle(UnsafeRawBufferPointer(start: payload, count: Int(payloadLength)))
            }
        }
        return malformed
    }

    /// Waits until a logged packet can be read, at most `milliseconds`; false on timeout.
    public func waitReadable(milliseconds: Int32) -> Bool {
        guard !closed.load(ordering: .acquiring) else { return false }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, milliseconds) > 0
    }

    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(fd)
    }

    deinit { close() }
}
