import Foundation
import Glibc

/// A D-Bus bus of a test's own: Debian's `dbus-daemon` on a socket in a fresh directory, and
/// optionally python3-dbusmock serving one of its templates (NetworkManager) on it. Nothing
/// touches the machine's buses; `stop()` ends both processes and removes the directory.
public final class PrivateDBus: @unchecked Sendable {
    /// The bus address (`unix:path=…`).
    public let address: String
    private let directory: URL
    private let daemon: Process
    private var mock: Process?

    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// Whether this machine has dbus-daemon and python3-dbusmock (the test script installs both).
    public static var toolsInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon")
            && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/dbusmock/templates/networkmanager.py")
    }

    /// Starts the bus and waits (at most 10 s) for its socket.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("netext-dbus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        address = "unix:path=\(socket)"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configPath = directory.appendingPathComponent("bus.conf")
        try config.write(to: configPath, atomically: true, encoding: .utf8)
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--config-file=\(configPath.path)", "--nofork", "--nopidfile", "--nosyslog"]
        daemon.standardOutput = FileHandle.nullDevice
        try daemon.run()
        // The socket file appears at bind(), a moment before the daemon listens on it (a client
        // in between is refused): ready once a connection is accepted.
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(socket) {
            guard Date() < deadline, daemon.isRunning else {
                stop()
                throw Unavailable(description: "dbus-daemon did not listen on \(socket) within 10 s")
            }
            usleep(20_000)
        }
    }

    /// Whether a stream connection to the Unix socket at `path` is accepted now.
    private static func accepts(_ path: String) -> Bool {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }

    /// Starts python3-dbusmock with `template` on this bus (it owns the template's name once
    /// ready; the caller waits for that).
    public func startMock(template: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-m", "dbusmock", "--template", template]
        var environment = ProcessInfo.processInfo.environment
        // Templates of system services (NetworkManager) use the system bus: this one stands in.
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        mock = process
    }

    /// Ends the mock and the bus (SIGKILL: neither keeps state worth a graceful end, and
    /// python's GLib loop takes seconds to notice SIGTERM) and removes the directory.
    public func stop() {
        for process in [mock, daemon].compactMap({ $0 }) where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            waitForExit(process, seconds: 5)
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
