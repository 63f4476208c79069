import FlowInspection
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import Synchronization

/// Holds DNS answers while a transparent proxy has host rules (``ProxyDNSHoldRules``): each UDP
/// answer arriving is read from netextd's netfilter queue, handed to `learn` — which returns once
/// the addresses of a name some host rule covers are in the rule's sets — and only then let go,
/// so an app's first connection to those addresses is already steered to the proxy. Answers
/// that are not readable DNS go on unchanged (counted). One thread reads the queue.
final class ProxyDNSHold: Sendable {
    private let queue: NetfilterQueue
    private let stopped = Atomic<Bool>(false)
    private let counts = Mutex((held: 0, unreadable: 0))

    /// Binds the queue, installs the rules (IPv4 and IPv6) and starts reading; throws with a
    /// sentence when either fails (nothing stays installed then).
    init(logger: Logger, learn: @escaping @Sendable (DNSAnswerAddresses) -> Void) throws(NetExtError) {
        Self.removeRules()
        queue = try Self.bindQueue()
        for (restore, _) in IPTablesTools.families {
            guard let restore else {
                queue.close()
                Self.removeRules()
                throw NetExtError(.connectionFailed, "host rules need iptables-nft to hold DNS answers (apt-get install iptables)")
            }
            let result = CommandRunner.run(restore, ["--noflush", "-w"], input: ProxyDNSHoldRules.restoreInput())
            guard result.status == 0 else {
                queue.close()
                Self.removeRules()
                throw NetExtError(.connectionFailed, "\(restore) refused the DNS hold rule: \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
        }
        let thread = Thread { [self] in
            read(learn: learn, logger: logger)
            // The reader unbinds the queue when it leaves (within half a second of `close`).
            queue.close()
        }
        thread.name = "netextd-proxy-dnshold"
        thread.start()
    }

    private func read(learn: @escaping @Sendable (DNSAnswerAddresses) -> Void, logger: Logger) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 131_072, alignment: 16)
        defer { buffer.deallocate() }
        var verdicts: [UInt32] = []
        while !stopped.load(ordering: .acquiring) {
            verdicts.removeAll(keepingCapacity: true)
            do {
                _ = try queue.receive(into: buffer, timeoutMilliseconds: 500) { packet in
                    verdicts.append(packet.id)
                    guard let parsed = FlowPacket(packet.bytes), parsed.transport == .udp, parsed.payloadLength > 0,
                          parsed.payloadOffset + parsed.payloadLength <= packet.bytes.count,
                          let answer = try? DNSAnswerAddresses(parsing: Array(packet.bytes[parsed.payloadOffset..<parsed.payloadOffset + parsed.payloadLength]))
                    else {
                        counts.withLock { $0.unreadable += 1 }
                        return
                    }
                    counts.withLock { $0.held += 1 }
                    if !answer.addresses.isEmpty { learn(answer) }
                }
            } catch {
                if !stopped.load(ordering: .acquiring) {
                    logger.warning("transparent proxy: DNS answers are no longer held for host rules", metadata: ["error": "\(error)"])
                }
                return
            }
            for id in verdicts { try? queue.setVerdict(.accept, for: id) }
        }
    }

    /// Binds the queue; an earlier hold's reader unbinds it within half a second of its `close`,
    /// so a busy queue is tried again for a second.
    private static func bindQueue() throws(NetExtError) -> NetfilterQueue {
        var lastError: SystemError?
        for attempt in 0..<11 {
            if attempt > 0 { usleep(100_000) }
            do { return try NetfilterQueue(number: ProxyDNSHoldRules.queueNumber, maxLength: 1_024, failOpen: true) } catch { lastError = error }
        }
        throw NetExtError(.connectionFailed, "cannot bind netfilter queue \(ProxyDNSHoldRules.queueNumber) to hold DNS answers for host rules: \(lastError.map { "\($0)" } ?? "?")")
    }

    /// The real ``AppSteeringController/DNSHoldOpener``.
    static func opener(logger: Logger) -> AppSteeringController.DNSHoldOpener {
        { learn throws(NetExtError) in
            let hold = try ProxyDNSHold(logger: logger, learn: learn)
            return { hold.close() }
        }
    }

    /// Answers held and let go, and packets that were not readable DNS answers, so far.
    var counters: (held: Int, unreadable: Int) { counts.withLock { $0 } }

    /// Removes the rules (answers pass again) and tells the reader to stop; it lets go of what it
    /// holds and unbinds the queue without being waited for (its last answer may be waiting on
    /// the caller).
    func close() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Self.removeRules()
    }

    /// Removes the chain and its jump (a crashed netextd's too); harmless when absent.
    static func removeRules() {
        for (_, plain) in IPTablesTools.families {
            guard let plain else { continue }
            for command in ProxyDNSHoldRules.removalCommands {
                // The jump could be there more than once after a crash mid-install.
                for _ in 0..<4 where CommandRunner.run(plain, ["-w"] + command).status == 0 {
                    if command[2] != "-D" { break }
                }
            }
        }
    }
}
