import Foundation
import NetExtCore
import NetExtTestSupport
import Synchronization
import Testing

@testable import NetExtDaemon

/// Detection's own name lookups against DNS servers on loopback played by the test: the query
/// goes out of the named interface (`lo`, `SO_BINDTODEVICE`: root) with the detection mark.
@Suite("Captive portal detection's names, looked up with the network's DNS server", .enabled(if: getuid() == 0, "binding to an interface needs root"))
struct NetworkNameResolverTests {
    /// A DNS server on 127.0.0.1 answering each query with `answer` (nil: silence), on a thread
    /// of its own, for at most 30 s; it records the names and socket marks it saw.
    final class FakeServer: @unchecked Sendable {
        let fd: Int32
        let port: UInt16
        private let seen = Mutex<[String]>([])
        private let seenTypes = Mutex<[UInt16]>([])
        private let running = Mutex(true)
        var names: [String] { seen.withLock { $0 } }
        /// The record types asked, in order.
        var types: [UInt16] { seenTypes.withLock { $0 } }

        /// On 127.0.0.1, or with `ipv6` on ::1.
        init(ipv6: Bool = false, answer: @escaping @Sendable (DNSQuery, [UInt8]) -> [UInt8]?) throws {
            let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_storage()
            var length: socklen_t
            if ipv6 {
                var v6 = sockaddr_in6()
                v6.sin6_family = sa_family_t(AF_INET6)
                v6.sin6_addr = in6addr_loopback
                withUnsafeMutableBytes(of: &address) { target in withUnsafeBytes(of: v6) { target.copyBytes(from: $0) } }
                length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            } else {
                var v4 = sockaddr_in()
                v4.sin_family = sa_family_t(AF_INET)
                v4.sin_addr.s_addr = inet_addr("127.0.0.1")
                withUnsafeMutableBytes(of: &address) { target in withUnsafeBytes(of: v4) { target.copyBytes(from: $0) } }
                length = socklen_t(MemoryLayout<sockaddr_in>.size)
            }
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            self.fd = fd
            // The port sits at the same offset in sockaddr_in and sockaddr_in6.
            port = withUnsafeBytes(of: address) { UInt16($0[2]) << 8 | UInt16($0[3]) }
            Thread { [self] in
                let began = Date()
                var buffer = [UInt8](repeating: 0, count: 2048)
                while running.withLock({ $0 }), Date().timeIntervalSince(began) < 30 {
                    var peer = sockaddr_storage()
                    var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
                    let count = withUnsafeMutablePointer(to: &peer) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &peerLength) }
                    }
                    guard count > 0 else { continue }
                    let message = Array(buffer[..<count])
                    guard let query = try? DNSQuery(parsing: message) else { continue }
                    seen.withLock { $0.append(query.name) }
                    seenTypes.withLock { $0.append(query.type) }
                    guard let reply = answer(query, message) else { continue }
                    _ = withUnsafePointer(to: &peer) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, reply, reply.count, 0, $0, peerLength) }
                    }
                }
            }.start()
        }

        func stop() {
            running.withLock { $0 = false }
            usleep(150_000)
            close(fd)
        }
    }

    /// The answer to `message` giving `name` the address `address`, or NXDOMAIN for others.
    static func answering(_ name: String, with address: [UInt8]) -> @Sendable (DNSQuery, [UInt8]) -> [UInt8]? {
        { query, message in
            var reply = Array(message[..<query.questionEnd])
            reply[2] = 0x81
            if query.name == name {
                reply[3] = 0x80
                reply[7] = 1
                reply += [0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4] + address
            } else {
                reply[3] = 0x83
            }
            return reply
        }
    }

    @Test("a name from the network's server; a numeric host as it is; an unknown name named with the server's NXDOMAIN")
    func looksUp() async throws {
        let server = try FakeServer(answer: Self.answering("portal.lab.test", with: [198, 51, 100, 1]))
        defer { server.stop() }
        let resolver = NetworkNameResolver(servers: ["127.0.0.1"], interface: "lo", timeoutMilliseconds: 2000, port: server.port)
        let found = try await offPool { [resolver] in try resolver.address(of: "Portal.Lab.Test").get() }
        #expect(found == "198.51.100.1")
        #expect(try resolver.address(of: "203.0.113.2").get() == "203.0.113.2")
        #expect(try resolver.address(of: "[2001:db8::1]").get() == "[2001:db8::1]")
        let unknown = try await offPool { [resolver] in resolver.address(of: "nowhere.lab.test") }
        guard case .failure(let error) = unknown else { Issue.record("an unknown name resolved: \(unknown)"); return }
        #expect(error.description.contains("nowhere.lab.test could not be looked up with the network's DNS server on lo"))
        #expect(error.description.contains("NXDOMAIN"))
        #expect(server.names.contains("portal.lab.test") && !server.names.contains("203.0.113.2"))
    }

    /// Answers `name`'s AAAA query with `address` (16 bytes), its A query with no address
    /// (NOERROR, no answers), and anything else with NXDOMAIN: an IPv6-only host.
    static func answeringAAAA(_ name: String, with address: [UInt8]) -> @Sendable (DNSQuery, [UInt8]) -> [UInt8]? {
        { query, message in
            var reply = Array(message[..<query.questionEnd])
            reply[2] = 0x81
            guard query.name == name else {
                reply[3] = 0x83
                return reply
            }
            reply[3] = 0x80
            if query.type == 28 {
                reply[7] = 1
                reply += [0xc0, 12, 0, 28, 0, 1, 0, 0, 0, 60, 0, 16] + address
            }
            return reply
        }
    }

    @Test("an IPv6 server (as DHCPv6 option 23 or an RDNSS option names one): A asked first, then AAAA for a host with IPv6 only; on an interface without IPv4, AAAA only")
    func ipv6() async throws {
        let server = try FakeServer(ipv6: true, answer: Self.answeringAAAA("portal6.lab.test", with: [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]))
        defer { server.stop() }
        var resolver = NetworkNameResolver(servers: ["::1"], interface: "lo", timeoutMilliseconds: 2000, port: server.port)
        let found = try await offPool { [resolver] in try resolver.address(of: "portal6.lab.test").get() }
        #expect(found == "2001:db8:1::1")
        #expect(server.types == [1, 28])
        resolver.preferIPv6 = true
        let again = try await offPool { [resolver] in try resolver.address(of: "portal6.lab.test").get() }
        #expect(again == "2001:db8:1::1")
        #expect(server.types == [1, 28, 28], "AAAA answered: A never asked")
        let none = try await offPool { [resolver] in resolver.address(of: "nowhere.lab.test") }
        guard case .failure(let error) = none else { Issue.record("an unknown name resolved: \(none)"); return }
        #expect(error.description.contains("::1") && error.description.contains("NXDOMAIN"))
    }

    @Test("a refusing first server is passed over for the second; a silent one is asked twice, each time it is listed")
    func fallsBack() async throws {
        let silent = try FakeServer { _, _ in nil }
        let good = try FakeServer(answer: Self.answering("check.lab.test", with: [203, 0, 113, 2]))
        defer { silent.stop(); good.stop() }
        // Nothing listens on 127.0.0.2 at the good server's port: the first server's refusal
        // (ICMP port unreachable) is taken at once, and the next one answers.
        var resolver = NetworkNameResolver(servers: ["127.0.0.2", "127.0.0.1"], interface: "lo", timeoutMilliseconds: 300, port: good.port)
        let found = try await offPool { [resolver] in try resolver.address(of: "check.lab.test").get() }
        #expect(found == "203.0.113.2")
        resolver = NetworkNameResolver(servers: ["127.0.0.1", "127.0.0.1"], interface: "lo", timeoutMilliseconds: 300, port: silent.port)
        let none = try await offPool { [resolver] in resolver.address(of: "check.lab.test") }
        guard case .failure(let error) = none else { Issue.record("silence resolved: \(none)"); return }
        #expect(error.description.contains("127.0.0.1 did not answer within 300 ms, twice"))
        #expect(silent.names.count == 4, "two tries at each of the two servers: \(silent.names)")
    }
}
