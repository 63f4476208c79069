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

    @Test("a server that goes silent: reasserting once keepalive + rekey timeout (15 s) after the unanswered data, initiations every 5 s, ended by the handshake")
    func silence() {
        var timers = connectedTimers()
        timers.received(at: at(1))
        timers.sent(at: at(2))  // sent after the last answer: the server owes us something
        let actions = run(&timers, from: 2, to: 27, session: { _ in .fresh })
        let reasserting = actions.filter { $0.1 == .beginReasserting }
        #expect(reasserting.map(\.0) == [17.25], "first tick past 2 + 15 s")
        #expect(actions.filter { $0.1 == .sendInitiation }.map(\.0) == [17.25, 22.25])
        #expect(timers.isReasserting)
        #expect(timers.handshakeCompleted(at: at(27)) == true, "the handshake ends reasserting")
        #expect(!timers.isReasserting)
        // One keepalive confirms the new session to the server (it has nothing else from us),
        // then the tunnel is quiet.
        #expect(run(&timers, from: 27.25, to: 60, session: { _ in .fresh }).map(\.1) == [.sendKeepalive])
        #expect(!timers.isReasserting)
    }

    @Test("the first packet after a long idle spell is not silence: the server has 15 s from that packet to answer (issue 18: an idle tunnel flapped)")
    func firstPacketAfterIdle() {
        var timers = connectedTimers()
        timers.sent(at: at(1))
        timers.received(at: at(2))
        // Idle for two minutes (one keepalive at 12), then data again at 130.
        #expect(run(&timers, from: 2, to: 130, session: { _ in .fresh }).map(\.1) == [.sendKeepalive])
        timers.sent(at: at(130))
        #expect(run(&timers, from: 130, to: 144.75, session: { _ in .fresh }).isEmpty, "no reasserting within 15 s of the packet")
        // The server's keepalive comes 10 s after the packet: still nothing owed.
        timers.received(at: at(140))
        timers.sent(at: at(150))
        #expect(run(&timers, from: 150, to: 165, session: { _ in .fresh }).allSatisfy { $0.1 != .beginReasserting })
        // More data while an answer is owed does not move the wait: silent 15 s after 170.
        timers.received(at: at(160))
        timers.sent(at: at(170))
        timers.sent(at: at(180))
        let owed = run(&timers, from: 170, to: 190, session: { _ in .fresh })
        #expect(owed.filter { $0.1 == .beginReasserting }.map(\.0) == [185.25])
    }

    @Test("an expired session starts a handshake even when the server is not silent")
    func expired() {
        var timers = connectedTimers()
        #expect(timers.tick(now: at(200), session: .expired) == [.sendInitiation])
        #expect(!timers.isReasserting)
    }
}
