import FlowInspection
import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// The host names app proxies' flows were looked up as (issue: flows addressed by name): while a
/// proxy runs, the steering copies every arriving DNS answer to a netfilter log group
/// (``FlowSteering/proxyDNSLogGroup``); they are read into a ``DNSNameCache``, and the flow
/// hand-over names a flow's destination from it, so a provider can send the name, not the
/// address, upstream (a SOCKS server then resolves it itself), and a transparent proxy can take
/// one site's flows.
///
/// The copy of an answer is queued on the log socket before the app has the answer, so before
/// the app can connect: a look-up that finds nothing reads what is queued first. A thread reads
/// the rest as it comes.
final class ProxyDNSNames: Sendable {
    private struct Reader: ~Copyable {
        let log: NetfilterLog
        let buffer: UnsafeMutableRawBufferPointer
        var cache = DNSNameCache()
        var answers = 0
        var malformed = 0
    }

    private let reader: Mutex<Reader>
    private let log: NetfilterLog

    /// Subscribes to the log group and starts reading, for netextd's lifetime (nothing is logged
    /// to the group while no proxy runs); throws if the subscription fails.
    init() throws(NetExtError) {
        do { log = try NetfilterLog(group: FlowSteering.proxyDNSLogGroup, copyRange: 1_500) } catch {
            throw NetExtError(.connectionFailed, "cannot subscribe to netfilter log group \(FlowSteering.proxyDNSLogGroup) (DNS answers for app proxies): \(error)")
        }
        reader = Mutex(Reader(log: log, buffer: .allocate(byteCount: 65_536, alignment: 16)))
        let thread = Thread { [self] in
            while true {
                guard log.waitReadable(milliseconds: 1_000) else { continue }
                readQueued()
            }
        }
        thread.name = "netextd-proxy-dns"
        thread.start()
    }

    /// Records every answer queued on the log socket now.
    private func readQueued() {
        let now = ContinuousClock.now
        reader.withLock { state in
            var answers: [DNSAnswerAddresses] = []
            let malformed = state.log.drain(into: state.buffer) { bytes in
                guard let packet = FlowPacket(bytes), packet.transport == .udp, packet.payloadLength > 0 else { return }
                let payload = Array(bytes[packet.payloadOffset..<min(packet.payloadOffset + packet.payloadLength, bytes.count)])
                if let answer = try? DNSAnswerAddresses(parsing: payload) { answers.append(answer) }
            }
            for answer in answers { state.cache.record(answer, now: now) }
            state.answers += answers.count
            state.malformed += malformed
        }
    }

    /// The name `address` was last answered for, if it was and the answer is still alive; what
    /// is queued is read first when the cache has nothing (an answer the app just received).
    func name(for address: [UInt8]) -> String? {
        let now = ContinuousClock.now
        if let known = reader.withLock({ $0.cache.name(for: address, now: now) }) { return known }
        readQueued()
        return reader.withLock { $0.cache.name(for: address, now: now) }
    }

    /// Answers read and packets that were not readable answers, so far.
    var counters: (answers: Int, malformed: Int) { reader.withLock { ($0.answers, $0.malformed) } }
}
