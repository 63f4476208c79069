import Foundation
import Logging
import Testing
@testable import HTTPServing

/// The plain-HTTP client between NetExt's roles, against a server that closes connections at
/// its request deadline (the CI failure of stop 31: a fresh connection, used only once a starved
/// task pool resumed its task, had been closed by the server and waited out the whole 150 s
/// timeout). The deadline here is 0.2 s, shorter than the task pool's stalls on a loaded machine:
/// only a request written from the connect callback itself gets through.
@Suite("Pooled HTTP client")
struct PooledHTTPClientTests {
    static func shortDeadlineServer() async throws -> (HTTPServer, Int) {
        var limits = HTTPServerLimits()
        limits.requestDeadline = 0.2
        return try await HTTPServerLimitsTests.serve(RecordingTarget(), limits: limits)
    }

    @Test func aConnectionTheServerClosedBeforeTheRequestFailsAtOnceAsNotSent() async throws {
        let (server, port) = try await Self.shortDeadlineServer()
        let client = PooledHTTPClient(timeout: 60)
        let connection = try await client.connect(host: "127.0.0.1", port: port)
        // Past the server's deadline: it has closed the connection (bounded: at most 10 s).
        for _ in 0..<100 where connection.channel.isActive { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!connection.channel.isActive, "the server kept an idle connection past its deadline")
        let began = ContinuousClock.now
        var failure: PooledHTTPClient.Failure?
        do throws(PooledHTTPClient.Failure) {
            let request = PooledHTTPClient.Request(method: "POST", secure: false, host: "127.0.0.1", port: port, target: "/x", headers: [], body: Array("abc".utf8))
            _ = try await client.exchange(request, on: connection)
        } catch { failure = error }
        #expect(failure == .notSent)
        #expect(ContinuousClock.now - began < .seconds(5), "waited \(ContinuousClock.now - began) for an answer that could not come")
        await server.shutdown()
    }

    @Test func aPooledConnectionClosedAtTheDeadlineIsReplacedAndTheRequestAnswered() async throws {
        let (server, port) = try await Self.shortDeadlineServer()
        let client = PooledHTTPClient(timeout: 60)
        let first = try await client.send(method: "POST", host: "127.0.0.1", port: port, target: "/x", headers: [], body: Array("abc".utf8))
        #expect(first.status == 200 && first.body == Array("cba".utf8))
        try await Task.sleep(for: .milliseconds(600))
        let began = ContinuousClock.now
        let second = try await client.send(method: "POST", host: "127.0.0.1", port: port, target: "/x", headers: [], body: Array("xyz".utf8))
        #expect(second.status == 200 && second.body == Array("zyx".utf8))
        // Far below the client's 60 s timeout, which is what a connection left for dead costs;
        // a loaded CI machine took 5.01 s here once (the task pool starved by other suites).
        #expect(ContinuousClock.now - began < .seconds(30))
        await server.shutdown()
    }
}
