import Foundation
import NetExtCore
import Testing

@testable import NetExtLinux

#if canImport(Glibc)
import Glibc
#endif

/// The D-Bus connection against buses that misbehave: played by a Unix socket of the test's own
/// that answers the authentication with a fixed line, then says nothing.
@Suite("D-Bus connection failures: refused authentication, silence, no bus")
struct DBusConnectionFailureTests {
    /// Listens on a fresh socket path; for one client, reads what it sends, answers `reply`
    /// once it has seen the AUTH line, then keeps the connection open and silent until closed.
    final class FakeBus: @unchecked Sendable {
        let path = NSTemporaryDirectory() + "netext-fakebus-\(UUID().uuidString.prefix(8))"
        private let listener: Int32
        init(reply: String) throws {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            listener = fd
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0, listen(fd, 1) == 0 else { throw SystemError("bind", errno: errno, subject: path) }
            Thread.detachNewThread {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                var seen: [UInt8] = []
                var byte: UInt8 = 0
                while !seen.suffix(2).elementsEqual([13, 10]), recv(client, &byte, 1, 0) == 1 { seen.append(byte) }
                _ = Array(reply.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, 0) }
                while recv(client, &byte, 1, 0) == 1 {}  // silent until the client goes
                close(client)
            }
        }
        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
            unlink(path)
        }
    }

    @Test("a bus that rejects EXTERNAL is refused with its answer")
    func rejected() throws {
        let bus = try FakeBus(reply: "REJECTED EXTERNAL\r\n")
        defer { bus.stop() }
        #expect(throws: DBusError.authenticationRefused("REJECTED EXTERNAL")) {
            _ = try DBusConnection(address: DBusAddress(parsing: "unix:path=\(bus.path)"), timeoutSeconds: 2)
        }
    }

    @Test("a bus that authenticates and then never answers Hello times out within the deadline")
    func silent() throws {
        let bus = try FakeBus(reply: "OK 0123456789abcdef0123456789abcdef\r\n")
        defer { bus.stop() }
        let started = Date()
        #expect(throws: DBusError.timedOut(member: "Hello", seconds: 1)) {
            _ = try DBusConnection(address: DBusAddress(parsing: "unix:path=\(bus.path)"), timeoutSeconds: 1)
        }
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test("no bus at the address, and addresses NetExt cannot use, are refused naming why")
    func addresses() throws {
        #expect(throws: DBusError.self) { _ = try DBusConnection(address: DBusAddress(parsing: "unix:path=/nonexistent/netext-bus"), timeoutSeconds: 1) }
        #expect(throws: DBusError.badAddress("tcp:host=localhost,port=1", reason: "the transport \"tcp\" is not supported, only unix")) {
            _ = try DBusAddress(parsing: "tcp:host=localhost,port=1")
        }
        #expect(throws: DBusError.self) { _ = try DBusAddress(parsing: "unix:guid=00") }
        #expect(throws: DBusError.self) { _ = try DBusAddress(parsing: "unix:path=%zz") }
        #expect(try DBusAddress(parsing: "unix:path=/run/a%20b,guid=1").socketPath == "/run/a b")
        #expect(try DBusAddress(parsing: "unix:abstract=netext").socketPath == "@netext")
        #expect(try DBusAddress.parseList("tcp:host=x;unix:path=/run/bus").map(\.socketPath) == ["/run/bus"])
    }
}
