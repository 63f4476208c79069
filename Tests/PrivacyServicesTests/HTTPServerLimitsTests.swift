import Foundation
import HTTPServing
import Logging
import NetExtTestSupport
import PrivacyPass
import Testing
@testable import PrivacyServices
#if canImport(Glibc)
import Glibc
#endif

/// Issue 26, item 6, scaled down: what a client without credentials can hold of an HTTP role's
/// server — memory for bodies, connections, time — and that the server lets go of it.
@Suite("HTTP roles under load")
struct HTTPServerLimitsTests {
    /// A plain TCP client on loopback with blocking calls bounded by `timeout` (run off the
    /// cooperative pool through `offPool`).
    final class RawClient: @unchecked Sendable {
        let fd: Int32

        /// Connects from `source` (any loopback address: Linux routes all of 127/8 to `lo`).
        init(port: Int, timeout: Double = 3, source: String = "127.0.0.1") throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard bound == 0 else { close(fd); throw POSIXError(.EADDRNOTAVAIL) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard result == 0 else { close(fd); throw POSIXError(.ECONNREFUSED) }
        }

        deinit { close(fd) }

        @discardableResult
        func send(_ text: String) -> Bool { send(Array(text.utf8)) }

        @discardableResult
        func send(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
        }

        /// Everything until the server closes or the receive timeout passes; `closed` tells which.
        func readUntilClosed() -> (text: String, closed: Bool) {
            var data: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count > 0 { data += buffer[0..<count]; continue }
                // A signal (another test's children exiting: SIGCHLD) interrupts a receive with a
                // timeout even under SA_RESTART (signal(7)): that is no close. A full run once
                // counted the flooder's connections closed so.
                if count < 0, errno == EINTR { continue }
                return (String(decoding: data, as: UTF8.self), count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            }
        }
    }

    static func serve(_ responder: any HTTPResponder, limits: HTTPServerLimits) async throws -> (HTTPServer, Int) {
        let server = HTTPServer(responder: responder, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }, limits: limits)
        let port = try await server.start(host: "127.0.0.1", port: 0)
        return (server, port)
    }

    /// Sends `head` and the first 64 KiB of its body, then reads the answer until the server closes.
    static func answerToHeadAndFirstBytes(port: Int, head: String) async throws -> (text: String, closed: Bool) {
        try await offPool {
            // A long receive timeout: the answer comes at once from a healthy server, but the
            // whole test run can starve the task pool the server answers on for tens of seconds.
            let client = try RawClient(port: port, timeout: 30)
            client.send(head)
            client.send([UInt8](repeating: 0x41, count: 65536))
            return client.readUntilClosed()
        }
    }

    @Test func aPIRRequestWithoutATokenIsRefusedBeforeItsBodyIsRead() async throws {
        let issuer = try await IssuerTests.Issuer.start()
        defer { Task { await issuer.stop() } }
        let verifier = try OriginTests.verifier(issuer: issuer, storePath: nil)
        #expect(await verifier.refreshKeys())
        let (server, port) = try await Self.serve(OriginTests.ProtectedTarget(verifier: verifier), limits: HTTPServerLimits())
        defer { Task { await server.shutdown() } }
        // A head announcing 16 MiB, and no body: the 401 comes at once, the connection closes.
        let answer = try await Self.answerToHeadAndFirstBytes(port: port, head: "POST /key HTTP/1.1\r\nHost: pir.test\r\nContent-Length: 16777216\r\n\r\n")
        #expect(answer.text.hasPrefix("HTTP/1.1 401"), "\(answer.text)")
        #expect(answer.text.contains("WWW-Authenticate: PrivateToken"))
        #expect(answer.closed)
        #expect(server.bufferedBodyBytes == 0)
        #expect(verifier.outcomes["missing"] == 1)
    }

    @Test(arguments: ["/relay", "/gateway"])
    func anOHTTPBodyOfTheWrongMediaTypeIsRefusedBeforeItIsRead(path: String) async throws {
        // Nothing listens behind either: the refusal must come before anything is forwarded.
        let directory = NSTemporaryDirectory() + "netext-media-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let responder: any HTTPResponder = path == "/relay"
            ? RelayResponder(gatewayURL: URL(string: "http://127.0.0.1:9/gateway")!, keysURL: nil)
            : GatewayResponder(keys: try GatewayKeyRing(directory: directory, schedule: try KeyRotationSchedule(lifetime: 100, overlap: 50), now: 1000), targets: [:])
        let (server, port) = try await Self.serve(responder, limits: HTTPServerLimits())
        defer { Task { await server.shutdown() } }
        let answer = try await Self.answerToHeadAndFirstBytes(
            port: port, head: "POST \(path) HTTP/1.1\r\nHost: relay.test\r\nContent-Type: application/octet-stream\r\nContent-Length: 4194304\r\n\r\n")
        #expect(answer.text.hasPrefix("HTTP/1.1 415"), "\(answer.text)")
        #expect(answer.closed)
        #expect(server.bufferedBodyBytes == 0)
    }

    @Test func connectionsAreCappedAndSlowOrIdleOnesClosedAtTheDeadline() async throws {
        var limits = HTTPServerLimits()
        limits.maximumConnections = 4
        // 3 s, and 2.5 s for the fifth connection's refusal: a refused connection is told apart
        // from one held to the deadline even on a loaded machine.
        limits.requestDeadline = 3
        let (server, port) = try await Self.serve(RecordingTarget(), limits: limits)
        defer { Task { await server.shutdown() } }
        let outcome = try await offPool { () -> (held: [Bool], extra: Bool, open: Int, seconds: Double) in
            let clients = try (0..<4).map { _ in try RawClient(port: port, timeout: 25) }
            // One idle, one with half a head (slowloris), one with half a body, one keep-alive
            // after a whole request.
            clients[1].send("POST /x HTTP/1.1\r\nHost: a\r\n")
            clients[2].send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nabc")
            clients[3].send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
            usleep(300_000)
            let open = server.openConnections
            let extra = try RawClient(port: port, timeout: 2.5).readUntilClosed().closed
            let began = Date()
            let closed = clients.map { $0.readUntilClosed().closed }
            return (closed, extra, open, Date().timeIntervalSince(began))
        }
        #expect(outcome.open == 4)
        #expect(outcome.extra, "a fifth connection was not closed")
        #expect(outcome.held == [true, true, true, true], "\(outcome.held)")
        // The deadline is 3 s (it was 1 s when these were seen); the bound leaves room for a loaded CI machine (3.98 s was seen
        // with every suite running on two cores) and still fails a deadline that was not applied
        // (the default is 30 s; a client gives up at 8 s and then `held` is false).
        // (With the server answering on the task pool, which the whole test run starves, 6.6 s
        // was seen; the client gives up at 25 s, then `held` is false.)
        #expect(outcome.seconds < 20, "closing took \(outcome.seconds) s")
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.openConnections == 0)
    }

    /// The deadline is for clients, not for the server: a request read whole is answered however
    /// long the responder takes, and the keep-alive connection then gets a fresh deadline,
    /// counted from the answer.
    @Test func noDeadlineWhileARequestIsAnsweredAndAFreshOneFromItsAnswer() async throws {
        var limits = HTTPServerLimits()
        limits.requestDeadline = 1
        let (server, port) = try await Self.serve(SlowResponder(delay: .milliseconds(1500)), limits: limits)
        defer { Task { await server.shutdown() } }
        let outcome = try await offPool { () -> (text: String, closed: Bool, seconds: Double) in
            let client = try RawClient(port: port, timeout: 60)
            let began = Date()
            client.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
            let answer = client.readUntilClosed()
            return (answer.text, answer.closed, Date().timeIntervalSince(began))
        }
        // Answered at 1.5 s, past the 1 s deadline, on a connection still open.
        #expect(outcome.text.hasPrefix("HTTP/1.1 200"), "\(outcome.text)")
        // Closed by the fresh deadline (1.5 + 1 s), not at the answer and not never (the client
        // gives up at 60 s, and then `closed` is false). The upper bound leaves room for a task
        // pool starved by the whole test run.
        #expect(outcome.closed)
        #expect(outcome.seconds >= 2.3 && outcome.seconds < 55, "closed after \(outcome.seconds) s")
    }

    @Test func oneSourceCannotTakeEveryConnection() async throws {
        var limits = HTTPServerLimits()
        limits.maximumConnections = 8
        limits.maximumConnectionsPerSource = 3
        // Far beyond the test's length: CI once took 43 s over this test, and the default 30 s
        // deadline then closed the flooder's idle connections before they were checked.
        limits.requestDeadline = 600
        let (server, port) = try await Self.serve(RecordingTarget(), limits: limits)
        defer { Task { await server.shutdown() } }
        let outcome = try await offPool { () -> (fourthClosed: Bool, openAfterFlood: Int, neighbour: String, heldStillOpen: Bool) in
            let flooder = try (0..<3).map { _ in try RawClient(port: port, timeout: 1, source: "127.0.0.1") }
            usleep(200_000)
            let fourthClosed = try RawClient(port: port, timeout: 1, source: "127.0.0.1").readUntilClosed().closed
            let openAfterFlood = server.openConnections
            // Another source is served while the first holds its whole share.
            let neighbour = try RawClient(port: port, timeout: 30, source: "127.0.0.2")
            neighbour.send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
            let answer = neighbour.readUntilClosed().text
            // The flooder's three are untouched (the deadline has not come).
            let heldStillOpen = flooder.allSatisfy { !$0.readUntilClosed().closed }
            return (fourthClosed, openAfterFlood, answer, heldStillOpen)
        }
        #expect(outcome.fourthClosed, "a fourth connection from one source was kept")
        #expect(outcome.openAfterFlood == 3)
        #expect(outcome.neighbour.hasPrefix("HTTP/1.1 200"), "\(outcome.neighbour)")
        #expect(outcome.heldStillOpen)
        // The flooder's connections closed with the clients: its source is counted down and
        // served again.
        // (Bounded waits that only run long on a loaded machine: CI once saw no answer in 3 s.)
        for _ in 0..<500 where server.openConnections > 0 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(server.openConnections == 0)
        let again = try await offPool { () -> String in
            let client = try RawClient(port: port, timeout: 30, source: "127.0.0.1")
            client.send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
            return client.readUntilClosed().text
        }
        #expect(again.hasPrefix("HTTP/1.1 200"), "\(again)")
    }

    @Test func bodiesShareOneBudgetAndAnErrorClosesTheConnection() async throws {
        var limits = HTTPServerLimits()
        limits.bufferedBodyBudget = 1 << 20
        // Long enough for the first body to be read and counted on a starved task pool.
        limits.requestDeadline = 60
        let target = RecordingTarget()
        target.status = 404
        let (server, port) = try await Self.serve(target, limits: limits)
        defer { Task { await server.shutdown() } }
        let answers = try await offPool { () -> (first: Bool, second: String, error: (String, Bool)) in
            let first = try RawClient(port: port)
            first.send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n")
            first.send([UInt8](repeating: 0x41, count: 900_000))
            // Bytes count against the budget once the request's task has taken them from the
            // connection; wait (bounded) until it has.
            for _ in 0..<600 where server.bufferedBodyBytes < 900_000 { usleep(50_000) }
            // The answers below come at once from a healthy server; the long receive timeouts only
            // keep a task pool starved by CI's first minute from reading as "no answer".
            let second = try RawClient(port: port, timeout: 30)
            second.send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 500000\r\n\r\n")
            second.send([UInt8](repeating: 0x42, count: 500_000))
            let refused = second.readUntilClosed()
            // A 4xx from the responder closes the connection, though the client asked to keep it.
            let bad = try RawClient(port: port, timeout: 30)
            bad.send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
            let error = bad.readUntilClosed()
            return (first.send([0x41]), refused.text, (error.text, error.closed))
        }
        #expect(answers.first)
        #expect(answers.second.hasPrefix("HTTP/1.1 503"), "\(answers.second)")
        #expect(answers.error.0.hasPrefix("HTTP/1.1 404") && answers.error.1, "\(answers.error)")
    }
}
