import NetExtCore

/// The thin executor of one network's `HotspotHelperSession`: it feeds the session what happens
/// (a join or leave, helpers' answers, commands past their deadline, the maintain and retry
/// timers firing, a helper lost) and carries out what the session asks (commands to helpers,
/// each with its deadline; the timers; state changes reported to `changed`). The helpers are
/// reached through `send` (false: the helper cannot be reached, which counts as gone); their
/// answers come back through ``answered(_:from:)``.
actor HotspotHelperDriver {
    typealias HelperID = HotspotHelperSession.HelperID
    /// Sends a command to a helper; false when it cannot be reached.
    typealias Send = @Sendable (HotspotHelperCommand, HelperID) async -> Bool
    /// Told of each state change, with the session's network and chosen helper at that moment.
    typealias Changed = @Sendable (HotspotHelperSession.State, HotspotNetwork?, HelperID?) async -> Void

    private var session: HotspotHelperSession
    private let send: Send
    private let changed: Changed
    /// Each command awaiting an answer, and the task that expires it at its deadline.
    private var deadlines: [UInt64: Task<Void, Never>] = [:]
    private var maintainTimer: Task<Void, Never>?
    private var retryTimer: Task<Void, Never>?
    private var stopped = false

    init(helpers: [HelperID], timing: HotspotHelperSession.Timing = .init(), send: @escaping Send, changed: @escaping Changed) {
        session = HotspotHelperSession(helpers: helpers, timing: timing)
        self.send = send
        self.changed = changed
    }

    /// The session's state now.
    var state: HotspotHelperSession.State { session.state }
    /// The helper chosen for the network, if any.
    var chosen: HelperID? { session.chosen }
    /// The network being handled, if any.
    var network: HotspotNetwork? { session.network }
    /// Answers ignored by the session (late, or from a helper not asked).
    var ignoredAnswers: Int { session.ignoredAnswers }

    /// A network was joined (or its portal found): the helpers evaluate it.
    func joined(_ network: HotspotNetwork) async { await run(.joined(network)) }

    /// The network was left: the chosen helper logs off.
    func left() async { await run(.left) }

    /// A helper's answer.
    func answered(_ response: HotspotHelperResponse, from helper: HelperID) async {
        deadlines.removeValue(forKey: response.commandID)?.cancel()
        await run(.answered(response, from: helper))
    }

    /// A helper ended (its process exited, or it could not be reached).
    func helperGone(_ helper: HelperID) async { await run(.helperGone(helper)) }

    /// The user opened the chosen helper (it asked for UI).
    func userOpened(_ helper: HelperID) async { await run(.userOpened(helper)) }

    /// Waits until no command awaits an answer, for at most `seconds` (a logoff's answer before
    /// its helper loses the network, or is stopped).
    func settle(within seconds: Double) async {
        let deadline = ContinuousClock.now + .milliseconds(Int64(max(0, seconds) * 1000))
        while !deadlines.isEmpty, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Cancels every deadline and timer; nothing more is sent.
    func stop() {
        stopped = true
        for task in deadlines.values { task.cancel() }
        deadlines = [:]
        cancelTimers()
    }

    private func run(_ event: HotspotHelperSession.Event) async {
        guard !stopped else { return }
        // The session changes at once (no suspension); its actions are then carried out in order.
        let actions = session.handle(event)
        for action in actions { await carryOut(action) }
    }

    private func carryOut(_ action: HotspotHelperSession.Action) async {
        guard !stopped else { return }
        switch action {
        case .send(let command, let helper, let deadline):
            // The deadline runs from before the send, so an answer racing the send finds it.
            deadlines[command.id] = after(seconds: deadline) { driver in await driver.expire(command.id) }
            if !(await send(command, helper)) {
                deadlines.removeValue(forKey: command.id)?.cancel()
                await run(.helperGone(helper))
            }
        case .scheduleMaintain(let seconds):
            maintainTimer?.cancel()
            maintainTimer = after(seconds: seconds) { driver in await driver.run(.maintainDue) }
        case .scheduleRetry(let seconds):
            retryTimer?.cancel()
            retryTimer = after(seconds: seconds) { driver in await driver.run(.retryDue) }
        case .cancelTimers:
            cancelTimers()
        case .changed(let state):
            await changed(state, session.network, session.chosen)
        }
    }

    private func expire(_ commandID: UInt64) async {
        guard deadlines.removeValue(forKey: commandID) != nil else { return }
        await run(.expired(commandID: commandID))
    }

    private func cancelTimers() {
        maintainTimer?.cancel()
        retryTimer?.cancel()
        maintainTimer = nil
        retryTimer = nil
    }

    /// A task that runs `body` on this driver after `seconds`, unless cancelled first.
    private func after(seconds: Double, _ body: @escaping @Sendable (HotspotHelperDriver) async -> Void) -> Task<Void, Never> {
        Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int64(max(0, seconds) * 1000)))
            guard !Task.isCancelled, let self else { return }
            await body(self)
        }
    }
}
