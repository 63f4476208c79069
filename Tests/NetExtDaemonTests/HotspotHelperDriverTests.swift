import Foundation
@testable import NetExtDaemon
import NetExtCore
import Synchronization
import Testing

/// The hotspot session's executor with helpers played by closures that answer on tasks of their
/// own, as helper processes do: real timers and deadlines, short ones.
@Suite("Hotspot helper driver: commands, deadlines and timers carried out")
struct HotspotHelperDriverTests {
    typealias HelperID = HotspotHelperDriver.HelperID

    /// Helpers that answer by `answer` (nil: no answer ever), or cannot be reached (`unreachable`).
    final class Helpers: Sendable {
        let sent = Mutex<[(helper: HelperID, kind: HotspotHelperCommand.Kind)]>([])
        let states = Mutex<[HotspotHelperSession.State]>([])
        let driver = Mutex<HotspotHelperDriver?>(nil)
        let answer: @Sendable (HelperID, HotspotHelperCommand) -> HotspotHelperResponse?
        let unreachable: Set<HelperID>

        init(unreachable: Set<HelperID> = [], answer: @escaping @Sendable (HelperID, HotspotHelperCommand) -> HotspotHelperResponse?) {
            self.answer = answer
            self.unreachable = unreachable
        }

        func makeDriver(_ helpers: [HelperID], timing: HotspotHelperSession.Timing) -> HotspotHelperDriver {
            let driver = HotspotHelperDriver(
                helpers: helpers, timing: timing,
                send: { [self] command, helper in
                    guard !unreachable.contains(helper) else { return false }
                    sent.withLock { $0.append((helper, command.kind)) }
                    if let response = answer(helper, command), let driver = self.driver.withLock({ $0 }) {
                        Task { await driver.answered(response, from: helper) }
                    }
                    return true
                },
                changed: { [self] state, _, _ in states.withLock { $0.append(state) } })
            self.driver.withLock { $0 = driver }
            return driver
        }

        func count(_ kind: HotspotHelperCommand.Kind, to helper: HelperID) -> Int {
            sent.withLock { $0.filter { $0.helper == helper && $0.kind == kind }.count }
        }

        /// Waits (at most `seconds`) until `condition` holds; whether it did. Generous: in a full parallel run
        /// on two cores the task pool has been seen held for ~100 s by other suites, and these
        /// tests' timers (and this poll) wait with it.
        func wait(seconds: Double = 150, until condition: @Sendable () -> Bool) async -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition() {
                if Date() > deadline { return false }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return true
        }
    }

    static let café = HotspotNetwork(ssid: "Café", interface: "veth-cafe")

    /// A helper's evaluation: the network with `confidence`.
    static func evaluation(_ command: HotspotHelperCommand, _ confidence: HotspotNetwork.Confidence) -> HotspotHelperResponse {
        var network = command.network!
        network.setConfidence(confidence)
        var response = command.createResponse(.success)
        response.setNetwork(network)
        return response
    }

    @Test("a helper that needs a person waits in awaitingUser; the person opening it sends presentUI, whose success maintains")
    func aHelperThatNeedsAPersonWaitsUntilOpened() async throws {
        let helpers = Helpers { _, command in
            switch command.kind {
            case .evaluate: Self.evaluation(command, .high)
            case .authenticate: command.createResponse(.uiRequired)
            default: command.createResponse(.success)
            }
        }
        let driver = helpers.makeDriver(["form"], timing: .init(commandDeadline: 5, maintainInterval: 60, retryDelay: 0.1, retries: 2))
        await driver.joined(Self.café)
        #expect(await helpers.wait { helpers.states.withLock { $0.last } == .awaitingUser })
        try await Task.sleep(for: .milliseconds(200))
        #expect(await driver.state == .awaitingUser, "nothing moves until a person opens the helper")
        #expect(helpers.count(.presentUI, to: "form") == 0)
        await driver.userOpened("form")
        #expect(await helpers.wait { helpers.states.withLock { $0.last } == .maintaining })
        #expect(helpers.count(.presentUI, to: "form") == 1)
    }

    @Test func theMostConfidentHelperAuthenticatesMaintainsOnItsTimerAndLogsOffWhenTheNetworkIsLeft() async throws {
        let helpers = Helpers { helper, command in
            switch command.kind {
            case .evaluate: Self.evaluation(command, helper == "high" ? .high : .low)
            default: command.createResponse(.success)
            }
        }
        let driver = helpers.makeDriver(["low", "high"], timing: .init(commandDeadline: 5, maintainInterval: 0.2, retryDelay: 0.1, retries: 2))
        await driver.joined(Self.café)
        #expect(await helpers.wait { helpers.count(.maintain, to: "high") >= 2 }, "the maintain timer did not fire twice: \(helpers.sent.withLock { $0 })")
        #expect(await driver.state == .maintaining)
        #expect(await driver.chosen == "high")
        #expect(helpers.count(.evaluate, to: "low") == 1 && helpers.count(.evaluate, to: "high") == 1)
        #expect(helpers.count(.authenticate, to: "high") == 1 && helpers.count(.authenticate, to: "low") == 0)
        #expect(Array(helpers.states.withLock { $0 }.prefix(3)) == [.evaluating, .authenticating, .maintaining])

        await driver.left()
        #expect(await helpers.wait { helpers.count(.logoff, to: "high") == 1 })
        #expect(await driver.state == .idle)
        // No timer outlives the network: no maintain after the logoff.
        let maintains = helpers.count(.maintain, to: "high")
        try await Task.sleep(for: .milliseconds(500))
        #expect(helpers.count(.maintain, to: "high") == maintains)
        #expect(helpers.count(.logoff, to: "low") == 0)
        await driver.stop()
    }

    @Test func aChosenHelperSilentToAuthenticateIsAskedAgainThenTheNetworkFailsWithTheReason() async throws {
        let helpers = Helpers { _, command in
            command.kind == .evaluate ? Self.evaluation(command, .high) : nil
        }
        let driver = helpers.makeDriver(["silent"], timing: .init(commandDeadline: 0.2, maintainInterval: 10, retryDelay: 0.05, retries: 2))
        await driver.joined(Self.café)
        let failed = await helpers.wait {
            helpers.states.withLock { states in states.contains { if case .failed = $0 { true } else { false } } }
        }
        #expect(failed, "the network did not fail: \(helpers.states.withLock { $0 })")
        // The first authenticate and two retries, each held to the deadline.
        #expect(helpers.count(.authenticate, to: "silent") == 3)
        if case .failed(let reason) = await driver.state {
            #expect(reason.contains("3 times in a row"), "\(reason)")
        }
        await driver.stop()
    }

    @Test func aHelperThatCannotBeReachedCountsAsGoneAndTheNextOneIsChosen() async throws {
        let helpers = Helpers(unreachable: ["crashed"]) { _, command in
            switch command.kind {
            case .evaluate: Self.evaluation(command, .low)
            default: command.createResponse(.success)
            }
        }
        let driver = helpers.makeDriver(["crashed", "standby"], timing: .init(commandDeadline: 5, maintainInterval: 10, retryDelay: 0.1, retries: 2))
        await driver.joined(Self.café)
        #expect(await helpers.wait { helpers.states.withLock { $0.contains(.maintaining) } })
        #expect(await driver.chosen == "standby")
        #expect(helpers.count(.authenticate, to: "standby") == 1)
        await driver.stop()
    }

    @Test func answersFromAHelperNotAskedAreIgnoredAndCounted() async throws {
        let helpers = Helpers { _, command in
            command.kind == .evaluate ? Self.evaluation(command, .high) : command.createResponse(.success)
        }
        let driver = helpers.makeDriver(["only"], timing: .init(commandDeadline: 5, maintainInterval: 10, retryDelay: 0.1, retries: 2))
        await driver.joined(Self.café)
        #expect(await helpers.wait { helpers.states.withLock { $0.contains(.maintaining) } })
        // An answer claiming a command of the session, from a helper that was not asked.
        await driver.answered(HotspotHelperResponse(commandID: 1, result: .failure), from: "stranger")
        #expect(await driver.ignoredAnswers == 1)
        #expect(await driver.state == .maintaining)
        await driver.stop()
    }
}
