import Foundation
import NetExtCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Plays hosts on a network a test attaches to a descriptor (the test's end of a server's fake
/// interface): every ICMPv4 echo request to one of `addresses` is answered, everything else is
/// counted and dropped. Runs on a thread of its own until `stop()`.
///
/// ```swift
/// let (serverEnd, officeEnd) = try SocketPair.makePackets()
/// let office = EchoResponder(descriptor: officeEnd, addresses: ["10.20.0.5"])
/// // … the server serves over serverEnd …
/// office.stop()
/// ```
public final class EchoResponder: Sendable {
    private let descriptor: Int32
    private let addresses: Set<[UInt8]>
    private let state = Mutex((running: true, answered: 0, ignored: 0))
    private let finished = DispatchSemaphore(value: 0)

    /// Starts answering; `descriptor` is closed by `stop()`.
    public init(descriptor: Int32, addresses: [String]) {
        self.descriptor = descriptor
        self.addresses = Set(addresses.compactMap(IPPrefix.parseAddress))
        Thread.detachNewThread { [self] in
            serve()
            finished.signal()
        }
    }

    /// Echo requests answered and packets ignored so far.
    public var counts: (answered: Int, ignored: Int) { state.withLock { ($0.answered, $0.ignored) } }

    private var isRunning: Bool { state.withLock { $0.running } }

    private func serve() {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        var reader = PacketDescriptor(descriptor)
        while isRunning {
            guard poll(&poller, 1, 100) > 0 else { continue }
            if poller.revents & Int16(POLLHUP | POLLERR) != 0 { return }
            while let packet = reader.receive() {
                guard let request = EchoPacket.parse(Array(packet)), request.isRequest, addresses.contains(request.destination) else {
                    state.withLock { $0.ignored += 1 }
                    continue
                }
                let reply = EchoPacket.reply(to: request)
                let sent = reply.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
                state.withLock { if sent == reply.count { $0.answered += 1 } else { $0.ignored += 1 } }
            }
        }
    }

    /// Stops answering, waits for the thread (at most a second) and closes the descriptor.
    public func stop() {
        let wasRunning = state.withLock { state in defer { state.running = false }; return state.running }
        guard wasRunning else { return }
        _ = finished.wait(timeout: .now() + 1)
        close(descriptor)
    }
}
