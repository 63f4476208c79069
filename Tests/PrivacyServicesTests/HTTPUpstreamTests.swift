import Foundation
import Testing
@testable import HTTPServing

/// The client between NetExt's roles (AsyncHTTPClient underneath) against a server that closes
/// idle connections at a short request deadline: a pooled connection the server has closed is
/// replaced, not used (the CI failure of stop 31: a request waited out the whole timeout on a
/// connection that was already gone); failures come back as sentences, at once.
@Suite("HTTP upstream client")
struct HTTPUpstreamTests {
    @Test func aPooledConnectionClosedAtTheServersDeadlineIsReplacedAndTheRequestAnswered() async throws {
        var limits = HTTPServerLimits()
        limits.requestDeadline = 0.2
        let (server, port) = try await HTTPServerLimitsTests.serve(RecordingTarget(), limits: limits)
        let upstream = HTTPUpstream(timeout: 60)
        let url = URL(string: "http://127.0.0.1:\(port)/x")!
        let first = try await upstream.exchange(method: "POST", url: url, headers: [], body: Array("abc".utf8))
        #expect(first.status == 200 && first.body == Array("cba".utf8))
        for round in 0..<3 {
            // Past the server's deadline: it has closed the pooled connection.
            try await Task.sleep(for: .milliseconds(600))
            let began = ContinuousClock.now
            let again = try await upstream.exchange(method: "POST", url: url, headers: [], body: Array("xyz\(round)".utf8))
            #expect(again.status == 200 && again.body == Array("\(round)zyx".utf8))
            // Far below the 60 s timeout, which is what a connection left for dead costs.
            #expect(ContinuousClock.now - began < .seconds(30))
        }
        await server.shutdown()
    }

    @Test func aRefusedConnectionFailsAtOnceWithTheSystemsReason() async throws {
        // A port nothing listens on: bind one, note it, close it.
        let (server, port) = try await HTTPServerLimitsTests.serve(RecordingTarget(), limits: HTTPServerLimits())
        await server.shutdown()
        let upstream = HTTPUpstream(timeout: 60)
        let began = ContinuousClock.now
        var failure: HTTPUpstream.Failure?
        do throws(HTTPUpstream.Failure) {
            _ = try await upstream.exchange(method: "GET", url: URL(string: "http://127.0.0.1:\(port)/")!, headers: [], body: [])
        } catch { failure = error }
        #expect(failure == .unreachable("127.0.0.1:\(port): Connection refused"), "\(String(describing: failure))")
        // At once on a quiet machine; retried with backoff it would take the 60 s timeout (21 s
        // was seen once on a CI machine whose event loops the whole run had starved).
        #expect(ContinuousClock.now - began < .seconds(40), "a refused connection was retried for \(ContinuousClock.now - began)")
        let answer = await upstream.send(method: "GET", url: URL(string: "http://127.0.0.1:\(port)/")!, headers: [], body: [])
        #expect(answer.status == 502)
        #expect(await HTTPUpstream(timeout: 1).send(method: "GET", url: URL(string: "ftp://127.0.0.1/")!, headers: [], body: []).status == 502)
    }
}
