import FlowInspection
import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// The host names app proxies' flows were looked up as (issue: flows addressed by name): while a
/// proxy runs, the steering copies every arriving DNS answer to a netfilter log group
/// (``FlowSteering/proxyDNSLogGroup``); a thread reads them into a ``DNSNameCache``, and the
/// flow hand-over names a flow's destination from it, so a provider can send the name, not
/// the address, upstream (a SOCKS server then resolves it itself).
final class ProxyDNSNames: Sendable {
    private let cache = Mutex(DNSNameCache())
    private let running = Atomic<Bool>(true)
    private let counts = Mutex((answers: 0, malformed: 0))

    /// Subscribes to the log group and starts reading; throws if the subscription fails.
    init() throws(NetExtError) {
        let log: NetfilterLog
        do { log = try NetfilterLog(group: FlowSteering.proxyDNSLogGroup, copyRange: 1_500) } catch {
            throw NetExtError(.connectionFailed, "cannot subscribe to netfilter log group \(FlowSteering.proxyDNSLogGroup) (DNS answers for app proxies): \(error)")
        }
        let thread = Thread { [self] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
            defer {
                buffer.deallocate()
                log.close()
            }
            while running.load(ordering: .acquiring) {
                guard log.waitReadable(milliseconds: 200) else { continue }
                var answers: [DNSAnswerAddresses] = []
                let malformed = log.drain(into: buffer) { bytes in
                    guard let packet = FlowPacket(bytes), packet.transport == .udp, packet.payloadLength > 0 else { return }
                    let payload = Array(bytes[packet.payloadOffset..<min(packet.payloadOffset + packet.payloadLength, bytes.count)])
                    if let answer = try? DNSAnswerAddresses(parsing: payload) { answers.append(answer) }
                }
                if answers.isEmpty && malformed == 0 { continue }
                let now = ContinuousClock.now
                cache.withLock { cache in
                    for answer in answers { cache.record(answer, now: now) }
                }
                counts.withLock {
                    $0.answers += answers.count
                    $0.malformed += malformed
                }
            }
        }
        thread.name = "netextd-proxy-dns"
        thread.start()
    }

    /// The name `address` was last answered for, if it was and the answer is still alive.
    func name(for address: [UInt8]) -> String? {
        let now = ContinuousClock.now
        return cache.withLock { $0.name(for: address, now: now) }
    }

    /// Answers read and packets that were not readable answers, so far.
    var counters: (answers: Int, malformed: Int) { counts.withLock { $0 } }

    /// Stops reading and closes the subscription.
    func stop() { running.store(false, ordering: .releasing) }
}
