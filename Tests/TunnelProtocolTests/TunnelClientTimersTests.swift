import Foundation
import Testing
import TunnelProtocol

/// The client's timers over a fake clock: times are seconds after `start`.
@Suite("Tunnel client timers (pure, fake clock)")
struct TunnelClientTimersTests {
    let start = Date(timeIntervalSinceReferenceDate: 1_000_000)
    func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }

    /// Timers whose first initiation went out at 0 and whose handshake completed at 0.1 s.
    func connectedTimers() -> TunnelClientTimers {
        var timers = TunnelClientTimers(timing: .standard)
        _ = timers.tick(now: at(0), session: .none)
        _ = timers.handshakeCompleted(at: at(0.1))
        return timers
    }

    /// Ticks every 250 ms from `from` to `to` (exclusive) and returns each action with its time.
    func run(_ timers: inout TunnelClientTimers, from: Double, to: Double, session: (Double) -> TunnelClientTimers.SessionHealth) -> [(Double, TunnelClientTimers.Action)] {
        var seen: [(Double, TunnelClientTimers.Action)] = []
        var time = from
        while time < to {
            for action in timers.tick(now: at(time), session: session(time)) { seen.append((time, action)) }
            time += 0.25
        }
        return seen
    }

    @Test("no session: an initiation at once, then one per rekeyTimeout (5 s) until a handshake completes")
    func retries() {
        var timers = TunnelClientTimers(timing: .standard)
        let actions = run(&timers, from: 0, to: 12, session: { _ in .none })
        #expect(actions.map(\.0) == [0, 5, 10])
        #expect(actions.allSatisfy { $0.1 == .sendInitiation })
    }

    @Test("a cookie reply lets the next initiation go at the next tick, not 5 s later")
    func cookieRetry() {
        var timers = TunnelClientTimers(timing: .standard)
        #expect(timers.tick(now: at(0), session: .none) == [.sendInitiation])
        #expect(timers.tick(now: at(0.25), session: .none) == [])
        timers.cookieReceived()
        #expect(timers.tick(now: at(0.5), session: .none) == [.sendInitiation])
    }

    @Test("a fresh session in use sends nothing of its own; a session that needs a rekey starts one handshake")
    func rekey() {
        var timers = TunnelClientTimers(timing: .standard)
        _ = timers.tick(now: at(0), session: .none)
        #expect(timers.handshakeCompleted(at: at(0.1)) == false)
        for second in stride(from: 0.5, to: 30, by: 0.5) {
            timers.sent(at: at(second))
            timers.received(at: at(second + 0.01))
        }
        let quiet = run(&timers, from: 0.25, to: 30, session: { _ in .fresh })
        #expect(quiet.isEmpty, "traffic both ways: no keepalive, no handshake")
        let rekey = run(&timers, from: 30, to: 31, session: { _ in .needsRekey })
        #expect(rekey.map(\.1) == [.sendInitiation])
    }

    @Test("data received and nothing sent for keepaliveTimeout: one keepalive; an idle tunnel then stays quiet, not reasserting")
    func passiveKeepalive() {
        var timers = connectedTimers()
        timers.sent(at: at(1))
        timers.received(at: at(2))
        let actions = run(&timers, from: 1, to: 60, session: { _ in .fresh })
        #expect(actions.count == 1)
        #expect(actions.first?.1 == .sendKeepalive)
        #expect(actions.first?.0 == 11, "10 s after the last send")
        #expect(!timers.isReasserting, "a keepalive awaits no answer: a server with nothing to say is not silent")
    }

    @Test("a server that goes silent: reasserting once after keepalive + rekey timeout (15 s), initiations every 5 s, ended by the handshake")
    func silence() {
        var timers = connectedTimers()
        timers.received(at: at(1))
        timers.sent(at: at(2))  // sent after the last answer: the server owes us something
        let actions = run(&timers, from: 2, to: 27, session: { _ in .fresh })
        let reasserting = actions.filter { $0.1 == .beginReasserting }
        #expect(reasserting.map(\.0) == [16.25], "first tick past 1 + 15 s")
        #expect(actions.filter { $0.1 == .sendInitiation }.map(\.0) == [16.25, 21.25, 26.25])
        #expect(timers.isReasserting)
        #expect(timers.handshakeCompleted(at: at(27)) == true, "the handshake ends reasserting")
        #expect(!timers.isReasserting)
        // One keepalive confirms the new session to the server (it has nothing else from us),
        // then the tunnel is quiet.
        #expect(run(&timers, from: 27.25, to: 60, session: { _ in .fresh }).map(\.1) == [.sendKeepalive])
        #expect(!timers.isReasserting)
    }

    @Test("an expired session starts a handshake even when the server is not silent")
    func expired() {
        var timers = connectedTimers()
        #expect(timers.tick(now: at(200), session: .expired) == [.sendInitiation])
        #expect(!timers.isReasserting)
    }
}
