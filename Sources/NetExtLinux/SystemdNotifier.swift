import CNetExtLinux
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how a `Type=notify` service is doing, with the protocol of sd_notify(3): one
/// datagram of newline-separated `KEY=VALUE` assignments sent to the `AF_UNIX` socket named in
/// `$NOTIFY_SOCKET` (a path, or an abstract-namespace name written with a leading `@`).
///
/// Outside systemd (no `$NOTIFY_SOCKET`) every call does nothing, so a server may always notify.
public struct SystemdNotifier: Sendable {
    /// Where notifications go; nil when the process was not started by systemd as `Type=notify`.
    public let socketPath: String?

    /// The notifier for `$NOTIFY_SOCKET` in `environment`.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"] ?? ""
        socketPath = path.isEmpty ? nil : path
    }

    /// A notifier for an explicit socket (tests, or a supervisor other than systemd).
    public init(socketPath: String?) { self.socketPath = socketPath }

    /// `READY=1`: startup is over and the service serves (systemd starts what waits for it).
    @discardableResult
    public func ready(status: String) -> Bool { send([("READY", "1"), ("STATUS", status)]) }

    /// `RELOADING=1` with `MONOTONIC_USEC`: a reload began (end it with ``ready(status:)``).
    @discardableResult
    public func reloading() -> Bool { send([("RELOADING", "1"), ("MONOTONIC_USEC", String(Self.monotonicMicroseconds()))]) }

    /// `STOPPING=1`: an orderly shutdown began.
    @discardableResult
    public func stopping(status: String) -> Bool { send([("STOPPING", "1"), ("STATUS", status)]) }

    /// `STATUS=…`: a line `systemctl status` shows.
    @discardableResult
    public func status(_ text: String) -> Bool { send([("STATUS", text)]) }

    /// Sends the assignments as one datagram. Returns whether systemd's socket took it (false
    /// outside systemd). A value's newlines are replaced by spaces: the protocol is line-based.
    @discardableResult
    public func send(_ assignments: [(key: String, value: String)]) -> Bool {
        guard let socketPath else { return false }
        let message = Self.message(assignments)
        return Self.sendDatagram(Array(message.utf8), to: socketPath)
    }

    /// The datagram for `assignments`: `KEY=VALUE` lines (sd_notify(3)).
    public static func message(_ assignments: [(key: String, value: String)]) -> String {
        assignments.map { "\($0.key)=\($0.value.replacingOccurrences(of: "\n", with: " "))" }.joined(separator: "\n") + "\n"
    }

    /// CLOCK_MONOTONIC in microseconds, as `MONOTONIC_USEC` wants it.
    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }

    private static func sendDatagram(_ bytes: [UInt8], to path: String) -> Bool {
        guard let (socketAddress, length) = TCPSocket.unixAddress(path) else { return false }
        var address = socketAddress
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, length) }
            }
        }
        return sent == bytes.count
    }
}
