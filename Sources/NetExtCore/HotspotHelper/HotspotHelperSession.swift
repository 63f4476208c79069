/// The hotspot helper state machine for one network at a time, after Apple's: on joining, every
/// helper is asked to `evaluate` the network; the one with the highest confidence is chosen and
/// asked to `authenticate`; `uiRequired` waits for the user to open the helper (`presentUI`);
/// once authenticated the helper is asked to `maintain` the session on a timer, and
/// `authenticationRequired` sends it back to authenticating; leaving the network sends `logoff`.
///
/// Pure: events in (``Event``), actions out (``Action``): commands to send with their deadlines,
/// timers to arm, the state reported. netextd's executor runs the helpers' processes, delivers
/// their answers and fires the timers. Only the chosen helper is told to authenticate, present
/// UI, maintain or log off; an answer to a command no longer awaited (or from a helper it was
/// not sent to) is ignored and counted.
///
/// What Apple leaves unsaid and this machine decides (``Timing`` holds the numbers): a helper
/// that does not answer in time counts as `confidence: .none` to `evaluate` and as a
/// `temporaryFailure` otherwise; `temporaryFailure` is retried after a delay, a few times in a
/// row, then the network is failed; equal confidences go to the helper registered first; a
/// helper that does not recognise `maintain` is taken as needing no maintenance.
public struct HotspotHelperSession: Sendable {
    /// A helper, by its provider's bundle identifier.
    public typealias HelperID = String

    /// The machine's numbers (not Apple's: it does not publish them).
    public struct Timing: Sendable, Hashable {
        /// Seconds a helper has to answer a command.
        public var commandDeadline: Double
        /// Seconds between `maintain` commands while authenticated.
        public var maintainInterval: Double
        /// Seconds before a command answered `temporaryFailure` (or not at all) is sent again.
        public var retryDelay: Double
        /// Temporary failures in a row that are retried; one more fails the network.
        public var retries: Int

        public init(commandDeadline: Double = 30, maintainInterval: Double = 300, retryDelay: Double = 5, retries: Int = 3) {
            self.commandDeadline = commandDeadline
            self.maintainInterval = maintainInterval
            self.retryDelay = retryDelay
            self.retries = retries
        }
    }

    public enum State: Sendable, Hashable, Codable {
        /// No network joined.
        case idle
        /// Waiting for the helpers' confidences.
        case evaluating
        /// No helper claimed the network: the system's own detection is all there is.
        case unclaimed
        /// The chosen helper is logging in.
        case authenticating
        /// The chosen helper needs a person (`uiRequired`): waiting for the user to open it.
        case awaitingUser
        /// The user opened the chosen helper; `presentUI` sent.
        case presentingUI
        /// Authenticated; `maintain` on a timer.
        case maintaining
        /// The chosen helper could not authenticate; why.
        case failed(String)
    }

    public enum Event: Sendable, Hashable {
        /// A network was joined (or the link came up on one).
        case joined(HotspotNetwork)
        /// The network was left.
        case left
        /// A helper answered.
        case answered(HotspotHelperResponse, from: HelperID)
        /// A command's deadline passed (the executor arms one per ``Action/send(_:to:deadline:)``).
        case expired(commandID: UInt64)
        /// The maintain timer fired.
        case maintainDue
        /// The retry timer fired.
        case retryDue
        /// The user opened a helper (`netext hotspot login`).
        case userOpened(HelperID)
        /// A helper's process ended.
        case helperGone(HelperID)
    }

    public enum Action: Sendable, Hashable {
        /// Send `command` to the helper; deliver ``Event/expired(commandID:)`` after `deadline` seconds.
        case send(HotspotHelperCommand, to: HelperID, deadline: Double)
        /// Deliver ``Event/maintainDue`` after this many seconds (replacing an armed one).
        case scheduleMaintain(after: Double)
        /// Deliver ``Event/retryDue`` after this many seconds (replacing an armed one).
        case scheduleRetry(after: Double)
        /// Disarm the maintain and retry timers.
        case cancelTimers
        /// The state changed to this.
        case changed(State)
    }

    /// The helpers, in the order they were registered (the first wins a tie).
    public let helpers: [HelperID]
    public let timing: Timing
    public private(set) var state: State = .idle
    /// The network joined, as the system reported it.
    public private(set) var network: HotspotNetwork?
    /// The helper chosen for the network.
    public private(set) var chosen: HelperID?
    /// Each helper's confidence for the network (filled while evaluating).
    public private(set) var confidences: [HelperID: HotspotNetwork.Confidence] = [:]
    /// Answers ignored: to commands not awaited, or from the wrong helper.
    public private(set) var ignoredAnswers = 0
    /// Commands awaiting an answer.
    private var pending: [UInt64: (helper: HelperID, kind: HotspotHelperCommand.Kind)] = [:]
    private var nextCommandID: UInt64
    private var temporaryFailuresInARow = 0

    /// `firstCommandID`: where this session's command ids start (an executor running several
    /// sessions gives each its own range).
    public init(helpers: [HelperID], timing: Timing = Timing(), firstCommandID: UInt64 = 1) {
        self.helpers = helpers
        self.timing = timing
        nextCommandID = firstCommandID
    }

    /// Whether a command is awaiting the helper's answer.
    public func isAwaiting(_ kind: HotspotHelperCommand.Kind) -> Bool { pending.values.contains { $0.kind == kind } }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .joined(let joined): return join(joined)
        case .left: return leave()
        case .answered(let response, let helper): return answer(response, from: helper)
        case .expired(let id): return expire(id)
        case .maintainDue:
            guard state == .maintaining, !isAwaiting(.maintain) else { return [] }
            return [sendToChosen(.maintain)]
        case .retryDue: return retry()
        case .userOpened(let helper):
            guard state == .awaitingUser, helper == chosen else { return [] }
            return move(to: .presentingUI) + [sendToChosen(.presentUI)]
        case .helperGone(let helper): return gone(helper)
        }
    }

    // MARK: Events

    private mutating func join(_ joined: HotspotNetwork) -> [Action] {
        var actions = state == .idle ? [] : leave()
        network = joined
        guard !helpers.isEmpty else { return actions + move(to: .unclaimed) }
        actions += move(to: .evaluating)
        var asked = joined
        asked.didJustJoin = true
        for helper in helpers { actions.append(send(.evaluate, about: asked, to: helper)) }
        return actions
    }

    private mutating func leave() -> [Action] {
        var actions: [Action] = [.cancelTimers]
        if let chosen, let network, [.authenticating, .awaitingUser, .presentingUI, .maintaining].contains(state) {
            actions.append(send(.logoff, about: chosenView(of: network), to: chosen))
        }
        dropAwaitedButLogoffs()
        network = nil
        chosen = nil
        confidences = [:]
        temporaryFailuresInARow = 0
        return actions + move(to: .idle)
    }

    private mutating func answer(_ response: HotspotHelperResponse, from helper: HelperID) -> [Action] {
        guard let awaited = pending[response.commandID], awaited.helper == helper else {
            ignoredAnswers += 1
            return []
        }
        pending[response.commandID] = nil
        switch awaited.kind {
        case .evaluate:
            let claimed = response.result == .success && response.network.map { network?.isSameNetwork(as: $0) ?? false } ?? false
            return evaluated(helper, claimed ? response.network?.confidence ?? .none : .none)
        case .authenticate: return authenticated(response.result)
        case .presentUI: return presented(response.result)
        case .maintain: return maintained(response.result)
        case .logoff, .filterScanList: return []
        }
    }

    private mutating func expire(_ id: UInt64) -> [Action] {
        guard let awaited = pending.removeValue(forKey: id) else { return [] }
        let silence = "\(awaited.helper) did not answer \(awaited.kind.rawValue) within \(Self.seconds(timing.commandDeadline))"
        switch awaited.kind {
        case .evaluate: return evaluated(awaited.helper, .none)
        case .authenticate, .maintain: return temporaryFailure(silence)
        case .presentUI: return move(to: .awaitingUser)
        case .logoff, .filterScanList: return []
        }
    }

    private mutating func retry() -> [Action] {
        switch state {
        case .authenticating where !isAwaiting(.authenticate): [sendToChosen(.authenticate)]
        case .maintaining where !isAwaiting(.maintain): [sendToChosen(.maintain)]
        default: []
        }
    }

    private mutating func gone(_ helper: HelperID) -> [Action] {
        let theirs = pending.filter { $0.value.helper == helper }
        for id in theirs.keys { pending[id] = nil }
        if state == .evaluating, theirs.values.contains(where: { $0.kind == .evaluate }) { return evaluated(helper, .none) }
        guard helper == chosen, [.authenticating, .awaitingUser, .presentingUI, .maintaining].contains(state) else { return [] }
        return fail("the chosen helper \(helper) ended")
    }

    // MARK: Answers

    /// Records `helper`'s confidence; once every helper has one, chooses.
    private mutating func evaluated(_ helper: HelperID, _ confidence: HotspotNetwork.Confidence) -> [Action] {
        confidences[helper] = confidence
        return isAwaiting(.evaluate) ? [] : choose()
    }

    /// The highest confidence above none wins; equal ones go to the helper registered first.
    private mutating func choose() -> [Action] {
        var best: (helper: HelperID, confidence: HotspotNetwork.Confidence)?
        for helper in helpers {
            let confidence = confidences[helper] ?? .none
            if confidence > (best?.confidence ?? .none) { best = (helper, confidence) }
        }
        guard let best else { return move(to: .unclaimed) }
        chosen = best.helper
        temporaryFailuresInARow = 0
        return move(to: .authenticating) + [sendToChosen(.authenticate)]
    }

    private mutating func authenticated(_ result: HotspotHelperResponse.Result) -> [Action] {
        switch result {
        case .success: return authenticatedNow()
        case .uiRequired: return move(to: .awaitingUser)
        case .temporaryFailure: return temporaryFailure("\(chosen ?? "the helper") answered temporaryFailure to authenticate")
        case .failure, .unsupportedNetwork, .commandNotRecognized, .authenticationRequired:
            return fail("\(chosen ?? "the helper") answered \(result.rawValue) to authenticate")
        }
    }

    private mutating func presented(_ result: HotspotHelperResponse.Result) -> [Action] {
        switch result {
        case .success: return authenticatedNow()
        case .uiRequired, .temporaryFailure: return move(to: .awaitingUser)
        case .failure, .unsupportedNetwork, .commandNotRecognized, .authenticationRequired:
            return fail("\(chosen ?? "the helper") answered \(result.rawValue) to presentUI")
        }
    }

    private mutating func maintained(_ result: HotspotHelperResponse.Result) -> [Action] {
        switch result {
        case .success:
            temporaryFailuresInARow = 0
            return [.scheduleMaintain(after: timing.maintainInterval)]
        case .commandNotRecognized:
            // A helper without maintenance: the session needs none; no more maintain commands.
            return [.cancelTimers]
        case .authenticationRequired:
            temporaryFailuresInARow = 0
            return move(to: .authenticating) + [.cancelTimers, sendToChosen(.authenticate)]
        case .uiRequired: return move(to: .awaitingUser) + [.cancelTimers]
        case .temporaryFailure: return temporaryFailure("\(chosen ?? "the helper") answered temporaryFailure to maintain")
        case .failure, .unsupportedNetwork: return fail("\(chosen ?? "the helper") answered \(result.rawValue) to maintain")
        }
    }

    private mutating func authenticatedNow() -> [Action] {
        temporaryFailuresInARow = 0
        return move(to: .maintaining) + [.scheduleMaintain(after: timing.maintainInterval)]
    }

    /// Retried after ``Timing/retryDelay`` up to ``Timing/retries`` times in a row, then failed.
    private mutating func temporaryFailure(_ reason: String) -> [Action] {
        temporaryFailuresInARow += 1
        guard temporaryFailuresInARow <= timing.retries else {
            return fail("\(reason) (\(temporaryFailuresInARow) times in a row)")
        }
        return [.scheduleRetry(after: timing.retryDelay)]
    }

    private mutating func fail(_ reason: String) -> [Action] {
        dropAwaitedButLogoffs()
        return [.cancelTimers] + move(to: .failed(reason))
    }

    // MARK: Helpers

    /// Forgets every awaited command but a `logoff` (whose answer is still accepted, and ignored).
    private mutating func dropAwaitedButLogoffs() {
        pending = pending.filter { $0.value.kind == .logoff }
    }

    private mutating func move(to next: State) -> [Action] {
        guard next != state else { return [] }
        state = next
        return [.changed(next)]
    }

    private func chosenView(of network: HotspotNetwork) -> HotspotNetwork {
        var view = network
        view.isChosenHelper = true
        view.confidence = chosen.flatMap { confidences[$0] } ?? .none
        return view
    }

    private mutating func sendToChosen(_ kind: HotspotHelperCommand.Kind) -> Action {
        // Only called with a network joined and a helper chosen.
        send(kind, about: chosenView(of: network ?? HotspotNetwork(interface: "")), to: chosen ?? "")
    }

    private mutating func send(_ kind: HotspotHelperCommand.Kind, about network: HotspotNetwork, to helper: HelperID) -> Action {
        let id = nextCommandID
        nextCommandID &+= 1
        pending[id] = (helper, kind)
        return .send(HotspotHelperCommand(id: id, kind: kind, network: network), to: helper, deadline: timing.commandDeadline)
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
