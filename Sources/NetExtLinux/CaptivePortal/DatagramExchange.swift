#if canImport(Glibc)
import Glibc
#endif

import CNetExtLinux
import NetExtCore

/// The retransmitting wait the DHCP exchanges and router solicitation share (RFC 2131 §4.1,
/// RFC 8415 §15, RFC 4861 §6.3.7): send, wait for the answer — the wait doubling with each
/// attempt, up to four times the first — and send again, a bounded number of times.
public enum DatagramExchange {
    /// One datagram that arrived: its bytes, where from, and its IPv6 hop limit when the socket
    /// asked for it (`IPV6_RECVHOPLIMIT`).
    struct Datagram {
        var bytes: [UInt8]
        var source: sockaddr_storage
        var hopLimit: Int?

        /// An IPv6 source's address bytes and scope (the arrival interface's index for a
        /// link-local source); nil for another family.
        var ipv6Source: (address: [UInt8], scope: UInt32)? {
            var copy = source
            return withUnsafeBytes(of: &copy) { raw in
                guard raw.load(fromByteOffset: 0, as: sa_family_t.self) == sa_family_t(AF_INET6) else { return nil }
                let address = Array(raw[8..<24])  // sockaddr_in6.sin6_addr
                return (address, raw.loadUnaligned(fromByteOffset: 24, as: UInt32.self))  // sin6_scope_id
            }
        }
    }

    /// What one exchange brought.
    public struct Outcome<Message: Sendable>: Sendable {
        /// The server's answer, parsed; nil when none came.
        public var reply: Message?
        /// Datagrams that arrived and were not that answer (another transaction, malformed).
        public var ignored = 0
        /// The last malformed datagram's fault, if any.
        public var lastProblem: String?
    }

    /// ``run(_:attempts:waitMilliseconds:send:take:)`` with each datagram parsed by `parse` and
    /// kept when `isAnswer` says it is this exchange's answer; the others counted.
    static func run<Message: Sendable>(
        _ fd: Int32, attempts: Int, waitMilliseconds: Int, send: () throws(SystemError) -> Void,
        parse: (Datagram) throws(CaptivePortalError) -> Message, isAnswer: (Message) -> Bool
    ) throws(SystemError) -> Outcome<Message> {
        var outcome = Outcome<Message>()
        _ = try run(fd, attempts: attempts, waitMilliseconds: waitMilliseconds, send: send) { datagram -> Bool in
            do throws(CaptivePortalError) {
                let message = try parse(datagram)
                guard isAnswer(message) else {
                    outcome.ignored += 1
                    return false
                }
                outcome.reply = message
                return true
            } catch {
                outcome.ignored += 1
                outcome.lastProblem = error.description
                return false
            }
        }
        return outcome
    }

    /// Sends (`send`) up to `attempts` times (at most 5) and gives every datagram that arrives on
    /// `fd` meanwhile to `take`, which returns true once it is the answer. Returns whether it came.
    static func run(
        _ fd: Int32, attempts: Int, waitMilliseconds: Int, send: () throws(SystemError) -> Void, take: (Datagram) -> Bool
    ) throws(SystemError) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 1500)
        for attempt in 0..<max(1, min(attempts, 5)) {
            try send()
            let deadline = monotonicMilliseconds() + Int64(waitMilliseconds << min(attempt, 2))
            while true {
                let remaining = deadline - monotonicMilliseconds()
                guard remaining > 0 else { break }
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, Int32(remaining)) > 0 else { continue }
                guard let datagram = receive(fd, buffer: &buffer) else { continue }
                if take(datagram) { return true }
            }
        }
        return false
    }

    /// One datagram with its source and hop limit, nil when the receive failed.
    static func receive(_ fd: Int32, buffer: inout [UInt8]) -> Datagram? {
        var source = sockaddr_storage()
        var hopLimit: Int32 = -1
        let count = buffer.withUnsafeMutableBytes { netext_receive_with_hop_limit(fd, $0.baseAddress, UInt($0.count), &source, &hopLimit) }
        guard count > 0 else { return nil }
        return Datagram(bytes: Array(buffer[..<count]), source: source, hopLimit: hopLimit >= 0 ? Int(hopLimit) : nil)
    }

    private static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
