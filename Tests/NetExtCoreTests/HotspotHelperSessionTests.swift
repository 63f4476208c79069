import Foundation
import NetExtCore
import NetExtTestSupport
import Testing

/// The hotspot helper state machine: who is chosen, what each answer leads to, timers and
/// deadlines, leaving the network, and random event sequences that keep its promises.
@Suite("Hotspot helpers: evaluate, choose, authenticate, maintain, log off")
struct HotspotHelperSessionTests {
    typealias Session = HotspotHelperSession
    static let portal = HotspotNetwork(ssid: "Airport Free WiFi", bssid: "02:00:00:00:00:01", interface: "wlan0", signalStrength: 0.8)

    /// The commands among `actions`, with whom they went to.
    static func sent(_ actions: [Session.Action]) -> [(command: HotspotHelperCommand, helper: String)] {
        actions.compactMap { if case .send(let command, let helper, _) = $0 { (command, helper) } else { nil } }
    }

    /// The answer `helper` gives to `command` with `result` (and, to evaluate, a confidence).
    static func answer(_ command: HotspotHelperCommand, _ result: HotspotHelperResponse.Result, confidence: HotspotNetwork.Confidence = .none) -> HotspotHelperResponse {
        var network = command.network
        network?.setConfidence(confidence)
        return HotspotHelperResponse(commandID: command.id, result: result, network: network)
    }

    /// A session with `helpers`, joined to the portal network and evaluated with `confidences`
    /// (helper → confidence; a helper left out does not answer); returns the session and the
    /// actions of the last step.
    static func evaluated(_ helpers: [String], _ confidences: [String: HotspotNetwork.Confidence], timing: Session.Timing = .init()) -> (Session, [Session.Action]) {
        var session = Session(helpers: helpers, timing: timing)
        let joined = session.handle(.joined(portal))
        var last: [Session.Action] = []
        for (command, helper) in sent(joined) {
            if let confidence = confidences[helper] {
                last = session.handle(.answered(answer(command, .success, confidence: confidence), from: helper))
            } else {
                last = session.handle(.expired(commandID: command.id))
            }
        }
        return (session, last)
    }

    @Test("joining asks every helper to evaluate the network, just joined; the highest confidence is chosen and alone asked to authenticate")
    func highestConfidenceWins() {
        var session = Session(helpers: ["com.example.low", "com.example.high"])
        let joined = session.handle(.joined(Self.portal))
        #expect(session.state == .evaluating)
        let evaluations = Self.sent(joined)
        #expect(evaluations.map(\.helper) == ["com.example.low", "com.example.high"])
        #expect(evaluations.allSatisfy { $0.command.kind == .evaluate && $0.command.network?.didJustJoin == true && $0.command.network?.isChosenHelper == false })
        #expect(Set(evaluations.map(\.command.id)).count == 2, "each command has its own id")

        #expect(session.handle(.answered(Self.answer(evaluations[0].command, .success, confidence: .low), from: "com.example.low")).isEmpty,
                "nothing happens until every helper has answered")
        let chosen = session.handle(.answered(Self.answer(evaluations[1].command, .success, confidence: .high), from: "com.example.high"))
        #expect(session.chosen == "com.example.high")
        #expect(session.state == .authenticating)
        #expect(chosen.contains(.changed(.authenticating)))
        let authenticate = Self.sent(chosen)
        #expect(authenticate.count == 1)
        #expect(authenticate.first?.helper == "com.example.high")
        #expect(authenticate.first?.command.kind == .authenticate)
        #expect(authenticate.first?.command.network?.isChosenHelper == true)
        #expect(authenticate.first?.command.network?.confidence == .high)
        #expect(session.confidences == ["com.example.low": .low, "com.example.high": .high])
    }

    @Test("equal confidences go to the helper registered first; none at all leaves the network unclaimed; no helpers, unclaimed at once")
    func tiesAndNoClaims() {
        let (tie, _) = Self.evaluated(["com.example.a", "com.example.b"], ["com.example.a": .low, "com.example.b": .low])
        #expect(tie.chosen == "com.example.a")
        let (nobody, last) = Self.evaluated(["com.example.a", "com.example.b"], ["com.example.a": .none, "com.example.b": .none])
        #expect(nobody.state == .unclaimed)
        #expect(nobody.chosen == nil)
        #expect(Self.sent(last).isEmpty)
        var empty = Session(helpers: [])
        #expect(empty.handle(.joined(Self.portal)) == [.changed(.unclaimed)])
    }

    @Test("a helper that answers failure, answers about another network, or never answers counts as no confidence")
    func evaluationsThatClaimNothing() {
        var session = Session(helpers: ["com.example.failing", "com.example.elsewhere", "com.example.silent", "com.example.low"])
        let evaluations = Self.sent(session.handle(.joined(Self.portal)))
        _ = session.handle(.answered(Self.answer(evaluations[0].command, .failure, confidence: .high), from: "com.example.failing"))
        var elsewhere = Self.answer(evaluations[1].command, .success, confidence: .high)
        elsewhere.network?.ssid = "Another network"
        _ = session.handle(.answered(elsewhere, from: "com.example.elsewhere"))
        _ = session.handle(.answered(Self.answer(evaluations[3].command, .success, confidence: .low), from: "com.example.low"))
        #expect(session.state == .evaluating, "still waiting for the silent one")
        let afterDeadline = session.handle(.expired(commandID: evaluations[2].command.id))
        #expect(session.chosen == "com.example.low")
        #expect(Self.sent(afterDeadline).map(\.command.kind) == [.authenticate])
        #expect(session.confidences["com.example.failing"] == HotspotNetwork.Confidence.none)
        #expect(session.confidences["com.example.elsewhere"] == HotspotNetwork.Confidence.none)
        #expect(session.confidences["com.example.silent"] == HotspotNetwork.Confidence.none)
    }

    @Test("authenticated: maintain on the timer; success keeps it going, authenticationRequired authenticates again")
    func maintainLoop() throws {
        let timing = Session.Timing(commandDeadline: 10, maintainInterval: 60, retryDelay: 2, retries: 2)
        var (session, last) = Self.evaluated(["com.example.portal"], ["com.example.portal": .high], timing: timing)
        let authenticate = try #require(Self.sent(last).first)
        let done = session.handle(.answered(Self.answer(authenticate.command, .success), from: "com.example.portal"))
        #expect(session.state == .maintaining)
        #expect(done == [.changed(.maintaining), .scheduleMaintain(after: 60)])

        let maintain = try #require(Self.sent(session.handle(.maintainDue)).first)
        #expect(maintain.command.kind == .maintain)
        #expect(session.handle(.maintainDue).isEmpty, "one maintain at a time")
        #expect(session.handle(.answered(Self.answer(maintain.command, .success), from: "com.example.portal")) == [.scheduleMaintain(after: 60)])

        let second = try #require(Self.sent(session.handle(.maintainDue)).first)
        let expired = session.handle(.answered(Self.answer(second.command, .authenticationRequired), from: "com.example.portal"))
        #expect(session.state == .authenticating, "the portal ended the session")
        #expect(Self.sent(expired).map(\.command.kind) == [.authenticate])
        let again = try #require(Self.sent(expired).first)
        _ = session.handle(.answered(Self.answer(again.command, .success), from: "com.example.portal"))
        #expect(session.state == .maintaining)
    }

    @Test("temporaryFailure and silence are retried after the delay, a few times in a row; then the network fails with the reason")
    func temporaryFailures() throws {
        let timing = Session.Timing(commandDeadline: 10, maintainInterval: 60, retryDelay: 2, retries: 2)
        var (session, last) = Self.evaluated(["com.example.portal"], ["com.example.portal": .high], timing: timing)
        var command = try #require(Self.sent(last).first?.command)
        #expect(session.handle(.answered(Self.answer(command, .temporaryFailure), from: "com.example.portal")) == [.scheduleRetry(after: 2)])
        command = try #require(Self.sent(session.handle(.retryDue)).first?.command)
        #expect(command.kind == .authenticate)
        #expect(session.handle(.expired(commandID: command.id)) == [.scheduleRetry(after: 2)], "silence is a temporary failure")
        command = try #require(Self.sent(session.handle(.retryDue)).first?.command)
        let failed = session.handle(.answered(Self.answer(command, .temporaryFailure), from: "com.example.portal"))
        guard case .failed(let reason) = session.state else { Issue.record("state \(session.state)"); return }
        #expect(reason.contains("temporaryFailure") && reason.contains("3 times in a row"), "\(reason)")
        #expect(failed.contains(.cancelTimers))
        #expect(session.handle(.retryDue).isEmpty, "nothing is retried once failed")
    }

    @Test("uiRequired waits for the user to open the chosen helper; presentUI's success authenticates; another helper opening changes nothing")
    func presentUI() throws {
        var (session, last) = Self.evaluated(["com.example.form", "com.example.other"], ["com.example.form": .high, "com.example.other": .low])
        let authenticate = try #require(Self.sent(last).first)
        #expect(session.handle(.answered(Self.answer(authenticate.command, .uiRequired), from: "com.example.form")) == [.changed(.awaitingUser)])
        #expect(session.handle(.userOpened("com.example.other")).isEmpty)
        let opened = session.handle(.userOpened("com.example.form"))
        #expect(session.state == .presentingUI)
        let present = try #require(Self.sent(opened).first)
        #expect(present.command.kind == .presentUI && present.helper == "com.example.form")
        #expect(session.handle(.answered(Self.answer(present.command, .success), from: "com.example.form")).contains(.changed(.maintaining)))
    }

    @Test("leaving sends logoff to the chosen helper alone; its answer and stale answers are ignored; a new join starts over")
    func leaving() throws {
        var (session, last) = Self.evaluated(["com.example.portal", "com.example.other"], ["com.example.portal": .high, "com.example.other": .low])
        let authenticate = try #require(Self.sent(last).first)
        _ = session.handle(.answered(Self.answer(authenticate.command, .success), from: "com.example.portal"))
        let left = session.handle(.left)
        #expect(session.state == .idle)
        #expect(session.network == nil && session.chosen == nil)
        #expect(left.first == .cancelTimers)
        let logoff = try #require(Self.sent(left).first)
        #expect(Self.sent(left).count == 1)
        #expect(logoff.command.kind == .logoff && logoff.helper == "com.example.portal")
        #expect(session.handle(.answered(Self.answer(logoff.command, .success), from: "com.example.portal")).isEmpty)
        #expect(session.ignoredAnswers == 0, "the logoff's answer was awaited")
        #expect(session.handle(.answered(Self.answer(authenticate.command, .success), from: "com.example.portal")).isEmpty)
        #expect(session.ignoredAnswers == 1, "an answer to a command already answered")
        #expect(session.handle(.maintainDue).isEmpty)

        let rejoined = session.handle(.joined(Self.portal))
        #expect(Self.sent(rejoined).map(\.command.kind) == [.evaluate, .evaluate])
        #expect(Self.sent(rejoined).allSatisfy { $0.command.id > logoff.command.id }, "ids are never reused")
    }

    @Test("an answer from a helper the command did not go to is ignored and counted")
    func answersFromTheWrongHelper() throws {
        var session = Session(helpers: ["com.example.a", "com.example.b"])
        let evaluations = Self.sent(session.handle(.joined(Self.portal)))
        #expect(session.handle(.answered(Self.answer(evaluations[0].command, .success, confidence: .high), from: "com.example.b")).isEmpty)
        #expect(session.ignoredAnswers == 1)
        #expect(session.state == .evaluating)
    }

    @Test("the chosen helper's process ending fails the network; a helper that ends while evaluating counts as no confidence")
    func helpersThatEnd() throws {
        var session = Session(helpers: ["com.example.a", "com.example.b"])
        let evaluations = Self.sent(session.handle(.joined(Self.portal)))
        _ = session.handle(.answered(Self.answer(evaluations[1].command, .success, confidence: .low), from: "com.example.b"))
        let chosen = session.handle(.helperGone("com.example.a"))
        #expect(session.chosen == "com.example.b")
        #expect(Self.sent(chosen).map(\.command.kind) == [.authenticate])
        _ = session.handle(.helperGone("com.example.b"))
        guard case .failed(let reason) = session.state else { Issue.record("state \(session.state)"); return }
        #expect(reason.contains("com.example.b"))
    }

    @Test("a helper without maintenance (commandNotRecognized to maintain) stays authenticated with no more maintain commands")
    func helperWithoutMaintenance() throws {
        var (session, last) = Self.evaluated(["com.example.portal"], ["com.example.portal": .high])
        let authenticate = try #require(Self.sent(last).first)
        _ = session.handle(.answered(Self.answer(authenticate.command, .success), from: "com.example.portal"))
        let maintain = try #require(Self.sent(session.handle(.maintainDue)).first)
        #expect(session.handle(.answered(Self.answer(maintain.command, .commandNotRecognized), from: "com.example.portal")) == [.cancelTimers])
        #expect(session.state == .maintaining)
    }

    @Test("random events, answers and results: ids never repeat, only the chosen helper is told to authenticate, present UI, maintain or log off, and states hold their promises")
    func randomSequences() {
        let helpers = ["com.example.a", "com.example.b", "com.example.c"]
        let results = HotspotHelperResponse.Result.allCases
        let confidences = HotspotNetwork.Confidence.allCases
        var generator = SplitMix64(state: 0x4854_5350)
        var statesSeen = Set<String>()
        for _ in 0..<300 {
            var session = Session(helpers: helpers, timing: .init(retries: 2))
            var outstanding: [(command: HotspotHelperCommand, helper: String)] = []
            var seen = Set<UInt64>()
            for _ in 0..<60 {
                var event: Session.Event
                switch Int.random(in: 0..<10, using: &generator) {
                case 0: event = .joined(Self.portal)
                case 1: event = .left
                case 2: event = .maintainDue
                case 3: event = .retryDue
                case 4: event = .userOpened(helpers.randomElement(using: &generator)!)
                case 5: event = .helperGone(helpers.randomElement(using: &generator)!)
                case 6 where !outstanding.isEmpty:
                    event = .expired(commandID: outstanding.remove(at: Int.random(in: 0..<outstanding.count, using: &generator)).command.id)
                default:
                    guard !outstanding.isEmpty else { event = .joined(Self.portal); break }
                    let picked = outstanding.remove(at: Int.random(in: 0..<outstanding.count, using: &generator))
                    let from = Int.random(in: 0..<8, using: &generator) == 0 ? helpers.randomElement(using: &generator)! : picked.helper
                    event = .answered(Self.answer(picked.command, results.randomElement(using: &generator)!, confidence: confidences.randomElement(using: &generator)!), from: from)
                }
                // A person opens the helper that waits for one, often (else the state is rare).
                if session.state == .awaitingUser, let chosen = session.chosen, Bool.random(using: &generator) { event = .userOpened(chosen) }
                for (command, helper) in Self.sent(session.handle(event)) {
                    #expect(seen.insert(command.id).inserted, "command id \(command.id) sent twice")
                    if command.kind != .evaluate {
                        #expect(command.network?.isChosenHelper == true)
                        #expect(command.kind == .logoff || helper == session.chosen, "\(command.kind) to \(helper), chosen \(session.chosen ?? "none")")
                    }
                    outstanding.append((command, helper))
                }
                statesSeen.insert("\(session.state)".prefix { $0 != "(" }.description)
                switch session.state {
                case .idle: #expect(session.network == nil && session.chosen == nil)
                case .authenticating, .awaitingUser, .presentingUI, .maintaining: #expect(session.chosen != nil && session.network != nil)
                case .evaluating: #expect(session.isAwaiting(.evaluate))
                case .unclaimed, .failed: break
                }
            }
        }
        #expect(statesSeen == ["idle", "evaluating", "unclaimed", "authenticating", "awaitingUser", "presentingUI", "maintaining", "failed"],
                "the sequences reach every state")
    }

    @Test("a helper's answer as JSON: read with defaults for what it leaves out; a malformed one is refused naming the key at fault; random bytes never crash the reader")
    func answersAsJSON() throws {
        let decoder = JSONDecoder()
        let answer = try decoder.decode(HotspotHelperResponse.self, from: Data(#"{"commandID": 7, "result": "success", "network": {"interface": "wlan0", "ssid": "Cafe", "confidence": "high"}, "networkList": []}"#.utf8))
        #expect(answer.commandID == 7 && answer.result == .success)
        #expect(answer.network == HotspotNetwork(ssid: "Cafe", interface: "wlan0", confidence: .high))
        let command = HotspotHelperCommand(id: 9, kind: .authenticate, network: Self.portal)
        #expect(try decoder.decode(HotspotHelperCommand.self, from: JSONEncoder().encode(command)) == command)

        let refusals: [(json: String, names: String)] = [
            (#"{"result": "success", "networkList": []}"#, "key 'commandID' is required"),
            (#"{"commandID": 7, "result": "done", "networkList": []}"#, "key 'result'"),
            (#"{"commandID": 7, "result": "success", "network": {"ssid": "Cafe"}, "networkList": []}"#, "key 'network.interface' is required"),
            (#"{"commandID": 7, "result": "success", "network": {"interface": "wlan0", "signalStrength": 1.5}, "networkList": []}"#, "key 'network.signalStrength': 1.5 is outside 0…1"),
            (#"{"commandID": 7, "result": "success", "networkList": [{"interface": "wlan0", "confidence": "certain"}]}"#, "key 'networkList[0].confidence'"),
        ]
        for (json, names) in refusals {
            do {
                _ = try decoder.decode(HotspotHelperResponse.self, from: Data(json.utf8))
                Issue.record("accepted \(json)")
            } catch {
                let sentence = JSONDecodingText.describe(error, data: Data(json.utf8))
                #expect(sentence.contains(names), "\(sentence)")
            }
        }
        var generator = SplitMix64(state: 0x4853_4a53)
        let valid = Array(try JSONEncoder().encode(answer))
        for _ in 0..<2_000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            _ = try? decoder.decode(HotspotHelperResponse.self, from: Data(bytes))
        }
    }

    @Test("a scan list annotated by filterScanList answers: the highest claim per network, the first helper on a tie, claims for unlisted networks ignored, failures claim nothing")
    func scanList() {
        let scan = [
            HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:0a", interface: "wlan0", signalStrength: 0.5),
            HotspotNetwork(ssid: "Airport", bssid: "02:00:00:00:00:0b", interface: "wlan0", signalStrength: 0.9, isSecure: true),
            HotspotNetwork(ssid: "Home", bssid: "02:00:00:00:00:0c", interface: "wlan0"),
        ]
        func claim(_ network: HotspotNetwork, _ confidence: HotspotNetwork.Confidence, password: String? = nil) -> HotspotNetwork {
            var claimed = network
            claimed.setConfidence(confidence)
            if let password { claimed.setPassword(password) }
            claimed.signalStrength = 0  // a helper cannot change what the scan saw
            return claimed
        }
        var unlisted = scan[0]
        unlisted.ssid = "Not scanned"
        let list = HotspotScanList(scan: scan, answers: [
            ("com.example.a", HotspotHelperResponse(commandID: 1, result: .success, networkList: [claim(scan[0], .low), claim(scan[1], .high, password: "boarding"), unlisted])),
            ("com.example.b", HotspotHelperResponse(commandID: 2, result: .success, networkList: [claim(scan[0], .high), claim(scan[1], .high), claim(unlisted, .high)])),
            ("com.example.c", HotspotHelperResponse(commandID: 3, result: .failure, networkList: [claim(scan[2], .high)])),
        ])
        #expect(list.entries.map(\.helper) == ["com.example.b", "com.example.a", nil])
        #expect(list.entries.map(\.network.confidence) == [.high, .high, .none])
        #expect(list.entries[1].network.password == "boarding")
        #expect(list.entries.map(\.network.signalStrength) == [0.5, 0.9, 1])
        #expect(list.ignoredClaims == 1, "the unlisted network's claim at high; the one without confidence claims nothing")
        #expect(!"\(list.entries[1].network)".contains("boarding"), "a network's description never shows its password")
    }
}
