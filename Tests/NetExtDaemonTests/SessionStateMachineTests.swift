import Foundation
import NetExtCore
import Testing
@testable import NetExtDaemon

@Suite("Session state machine")
struct SessionStateMachineTests {
    @Test("start, connect, stop, stopped")
    func happyPath() {
        var machine = SessionStateMachine()
        #expect(machine.handle(.startRequested) == [.launchProvider, .publishStatus(previous: .disconnected)])
        #expect(machine.status == .connecting)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(machine.handle(.providerStarted, now: now) == [.publishStatus(previous: .connecting)])
        #expect(machine.status == .connected && machine.connectedDate == now)
        #expect(machine.handle(.stopRequested(.userInitiated)) == [.sendStop(.userInitiated), .publishStatus(previous: .connected)])
        #expect(machine.handle(.providerStopped) == [.terminateProvider, .publishStatus(previous: .disconnecting)])
        #expect(machine.status == .disconnected && machine.connectedDate == nil && machine.lastDisconnectError == nil)
        #expect(machine.handle(.providerExited("exited with status 0")) == [], "a late exit changes nothing")
    }

    @Test("a failing start ends disconnected with the provider's error")
    func failedStart() {
        var machine = SessionStateMachine()
        _ = machine.handle(.startRequested)
        let error = NetExtError(.connectionFailed, "bad credentials")
        #expect(machine.handle(.providerFailed(error)) == [.terminateProvider, .publishStatus(previous: .connecting)])
        #expect(machine.lastDisconnectError == error)
        // Starting again clears the error.
        _ = machine.handle(.startRequested)
        #expect(machine.lastDisconnectError == nil)
    }

    @Test("a crash while connected is reported as the disconnect error")
    func crash() {
        var machine = SessionStateMachine()
        _ = machine.handle(.startRequested)
        _ = machine.handle(.providerStarted)
        #expect(machine.handle(.providerExited("killed by signal 9")) == [.publishStatus(previous: .connected)])
        #expect(machine.status == .disconnected)
        #expect(machine.lastDisconnectError?.code == .providerFailed)
        #expect(machine.lastDisconnectError?.message == "the provider killed by signal 9")
    }

    @Test("repeated or out-of-place events change nothing")
    func idempotent() {
        var machine = SessionStateMachine()
        #expect(machine.handle(.stopRequested(.userInitiated)) == [])
        #expect(machine.handle(.providerStarted) == [])
        _ = machine.handle(.startRequested)
        #expect(machine.handle(.startRequested) == [])
        _ = machine.handle(.stopRequested(.userInitiated))
        #expect(machine.handle(.stopRequested(.userInitiated)) == [])
        #expect(machine.handle(.providerExited("exited with status 0")) == [.publishStatus(previous: .disconnecting)])
        #expect(machine.lastDisconnectError == nil, "an exit after a requested stop is not an error")
    }
}
