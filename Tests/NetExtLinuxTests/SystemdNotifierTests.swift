import Foundation
@testable import NetExtLinux
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// sd_notify(3)'s protocol, received by a datagram socket standing in for systemd.
@Suite("systemd notification")
struct SystemdNotifierTests {
    @Test func messageIsNewlineSeparatedAssignments() {
        #expect(SystemdNotifier.message([("READY", "1"), ("STATUS", "serving on 127.0.0.1:8080")]) == "READY=1\nSTATUS=serving on 127.0.0.1:8080\n")
        // A value cannot start another assignment.
        #expect(SystemdNotifier.message([("STATUS", "two\nlines")]) == "STATUS=two lines\n")
    }

    @Test func outsideSystemdNothingIsSent() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(notifier.socketPath == nil)
        #expect(!notifier.ready(status: "x"))
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]).socketPath == nil)
    }

    @Test func readyReloadingStoppingReachAPathSocket() throws {
        let path = NSTemporaryDirectory() + "netext-notify-\(UUID().uuidString.prefix(8)).sock"
        let receiver = try DatagramReceiver(path: path)
        defer { receiver.close() }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path])
        #expect(notifier.ready(status: "serving"))
        #expect(receiver.next() == "READY=1\nSTATUS=serving\n")
        #expect(notifier.reloading())
        let reloading = receiver.next() ?? ""
        #expect(reloading.hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
        // MONOTONIC_USEC is CLOCK_MONOTONIC now, in microseconds.
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let sent = UInt64(reloading.split(separator: "\n")[1].dropFirst("MONOTONIC_USEC=".count)) ?? 0
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        #expect(sent <= microseconds && microseconds - sent < 5_000_000)
        #expect(notifier.stopping(status: "shutting down (SIGTERM)"))
        #expect(receiver.next() == "STOPPING=1\nSTATUS=shutting down (SIGTERM)\n")
    }

    @Test func abstractSocketNamesWork() throws {
        let name = "netext-notify-\(UUID().uuidString.prefix(8))"
        let receiver = try DatagramReceiver(abstractName: name)
        defer { receiver.close() }
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "@" + name]).status("hello"))
        #expect(receiver.next() == "STATUS=hello\n")
    }

    @Test func aMissingSocketIsReportedNotFatal() {
        #expect(!SystemdNotifier(socketPath: "/nonexistent/notify.sock").ready(status: "x"))
        #expect(!SystemdNotifier(socketPath: "/" + String(repeating: "x", count: 200)).ready(status: "x"))
    }
}

/// A bound `AF_UNIX` datagram socket (a path, or an abstract name) with a receive timeout.
final class DatagramReceiver {
    let fd: Int32
    let path: String?

    struct Failure: Error { let what: String }

    init(path: String) throws {
        self.path = path
        fd = try Self.bound(path)
    }

    init(abstractName: String) throws {
        path = nil
        fd = try Self.bound("@" + abstractName)
    }

    private static func bound(_ name: String) throws -> Int32 {
        guard let (socketAddress, length) = TCPSocket.unixAddress(name) else { throw Failure(what: "address of \(name)") }
        var address = socketAddress
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(what: "socket") }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { Glibc.close(fd); throw Failure(what: "bind: errno \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// The next datagram as text, or nil after 5 s.
    func next() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return got > 0 ? String(decoding: buffer[..<got], as: UTF8.self) : nil
    }

    func close() {
        Glibc.close(fd)
        if let path { unlink(path) }
    }
}
