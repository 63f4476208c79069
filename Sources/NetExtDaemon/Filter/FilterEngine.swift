import FlowInspection
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import QUICInitial
import Synchronization

/// The content filter's packet loop: reads the netfilter queue on a thread of its own, keeps the
/// flow table, holds a new flow's packets while the data provider decides, and turns verdicts
/// into conntrack marks so the rest of a decided flow never leaves the kernel.
final class FilterEngine: Sendable {
    /// Why a flow got its verdict.
    enum Reason: String, Sendable, Codable {
        case provider
        /// The control provider decided a flow the data provider sent it (`needRules`).
        case controlProvider = "control-provider"
        /// The provider was unavailable or missed the deadline; the failure policy decided.
        case failurePolicy = "failure-policy"
    }

    private struct State: Sendable {
        var tracker = FlowTracker()
        var held: [UInt64: [UInt32]] = [:]
        /// Flows the data provider answered `needRules` for (sent to the control provider).
        var awaitingRules: Set<UInt64> = []
        /// For cleartext HTTP flows being judged: the client's last request segment, from which
        /// a block page continues the connection.
        var requests: [UInt64: FlowPacket] = [:]
        /// When each flow was first asked about, for the verdict latency.
        var askedAt: [UInt64: ContinuousClock.Instant] = [:]
        /// The most recent verdict latencies (microseconds), a ring.
        var latencies: [Int] = []
        var latencyCursor = 0
        var counters = FilterCounters()
        var log = FilterLog()
        var stopped = false
    }

    private let queue: any FilterPacketQueue
    /// DNS answers (copies), read before each batch of queued packets.
    private let dnsLog: (any FilterDNSLog)?
    private let failOpen: Bool
    private let deadline: Duration
    private let logger: Logger
    /// Sends a new flow to the provider; false when no provider is there to ask.
    private let ask: @Sendable (FilterFlow) -> Bool
    /// Shows the provider data of a flow it reads (`filterData`); false when it cannot.
    private let askData: @Sendable (UInt64, FlowDataFilter.Question) -> Bool
    /// Sends a flow the data provider could not judge to the control provider; false when there
    /// is none to ask.
    private let askControl: @Sendable (FilterFlow) -> Bool
    /// The block page for a blocked HTTP flow, with a provider's remediation link if it gave
    /// one (nil: reset it like any other).
    private let blockPage: @Sendable (FilterFlow, FilterRemediation?) -> BlockPage?
    private let injector: (any FilterPacketInjector)?
    private let state = Mutex(State())
    private let finished = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let threadDone = Atomic<Bool>(false)
    /// Packets of one undecided flow held at most; more are dropped (counted).
    static let heldPerFlowLimit = 512

    init(
        queue: any FilterPacketQueue, dnsLog: (any FilterDNSLog)?, failOpen: Bool, deadline: Duration, logger: Logger, injector: (any FilterPacketInjector)?,
        blockPage: @escaping @Sendable (FilterFlow, FilterRemediation?) -> BlockPage?, askControl: @escaping @Sendable (FilterFlow) -> Bool,
        ask: @escaping @Sendable (FilterFlow) -> Bool, askData: @escaping @Sendable (UInt64, FlowDataFilter.Question) -> Bool
    ) {
        self.askData = askData
        self.dnsLog = dnsLog
        state.withLock { $0.tracker.quicInitialFrames = { QUICInitialReader.cryptoFrames(in: $0) } }
        self.askControl = askControl
        self.queue = queue
        self.injector = injector
        self.blockPage = blockPage
        self.failOpen = failOpen
        self.deadline = deadline
        self.logger = logger
        self.ask = ask
    }

    var counters: FilterCounters { state.withLock { $0.counters } }
    /// Verdict latencies kept for the percentiles.
    static let latencySamples = 10_000
    var verdictLatency: FilterStatus.LatencySummary? { FilterStatus.LatencySummary(state.withLock { $0.latencies }) }
    var trackedFlows: Int { state.withLock { $0.tracker.count } }
    func logEntries(limit: Int) -> [FilterLogEntry] { state.withLock { $0.log.latest(limit) } }

    /// Starts the reading thread.
    func start() {
        let thread = Thread { [self] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
            let logBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
            defer {
                buffer.deallocate()
                logBuffer.deallocate()
            }
            var lastExpiry = ContinuousClock.now
            let owners = SocketOwnerLookup()
            while !state.withLock({ $0.stopped }) {
                do {
                    // A DNS answer is logged before the program that asked can connect: reading
                    // the log before each batch puts its names in place for the new flows.
                    var readLog = false
                    let malformed = try queue.receive(into: buffer, timeoutMilliseconds: 200) { packet in
                        if !readLog {
                            readLog = true
                            readDNSAnswers(into: logBuffer)
                        }
                        handle(packet, owners: owners)
                    }
                    if !readLog { readDNSAnswers(into: logBuffer) }
                    if malformed > 0 { state.withLock { $0.counters.malformedPackets += malformed } }
                } catch {
                    if !state.withLock({ $0.stopped }) { logger.error("filter queue failed", metadata: ["error": "\(error)"]) }
                    break
                }
                // Deadlines are checked at most every 100 ms, not per received batch.
                let now = ContinuousClock.now
                if now - lastExpiry >= .milliseconds(100) {
                    lastExpiry = now
                    expireOverdue()
                }
            }
            threadDone.store(true, ordering: .releasing)
            finished.withLock { continuation in
                continuation?.resume()
                continuation = nil
            }
        }
        thread.name = "netextd-filter-queue"
        thread.start()
    }

    /// Stops the thread and releases every held packet by the failure policy; waits for the
    /// thread to end.
    func stop() async {
        let waiting = state.withLock { state -> [FilterFlow] in
            state.stopped = true
            return state.tracker.waitingFlows
        }
        for flow in waiting { deliver(flowID: flow.id, verdict: failOpen ? .allow : .drop, reason: .failurePolicy) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = finished.withLock { pending -> Bool in
                if threadDone.load(ordering: .acquiring) { return true }
                pending = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        queue.close()
        dnsLog?.close()
    }

    /// Records the names in the DNS answers logged since the last look.
    private func readDNSAnswers(into buffer: UnsafeMutableRawBufferPointer) {
        guard let dnsLog else { return }
        var answers: [DNSAnswerAddresses] = []
        let malformed = dnsLog.drain(into: buffer) { bytes in
            guard let packet = FlowPacket(bytes), packet.transport == .udp, packet.payloadLength > 0 else { return }
            let payload = Array(bytes[packet.payloadOffset..<min(packet.payloadOffset + packet.payloadLength, bytes.count)])
            if let answer = try? DNSAnswerAddresses(parsing: payload) { answers.append(answer) }
        }
        guard !answers.isEmpty || malformed > 0 else { return }
        let now = ContinuousClock.now
        state.withLock { state in
            for answer in answers { state.tracker.dnsNames.record(answer, now: now) }
            state.counters.dnsAnswersSeen += answers.count
            state.counters.malformedPackets += malformed
        }
    }

    private func handle(_ packet: NetfilterQueue.Packet, owners: SocketOwnerLookup) {
        // A re-injected packet that came back: its flow could not keep the mark. Decide this
        // packet directly instead of repeating it again.
        let returned = packet.mark & FilterSteering.verdictMask
        if returned != 0 {
            state.withLock { $0.counters.verdictErrors += 1 }
            setVerdict(FilterSteering.isAllowed(mark: returned) ? .accept : .drop, for: packet.id)
            return
        }
        guard let parsed = FlowPacket(packet.bytes) else {
            state.withLock { $0.counters.malformedPackets += 1 }
            // Not readable as IP: the failure policy decides this one packet.
            setVerdict(failOpen ? .accept : .drop, for: packet.id)
            return
        }
        let owner = packet.owner.map { SourceApplication(uid: $0.uid, gid: $0.gid) }
        let now = ContinuousClock.now
        let decision = state.withLock { state -> FlowTracker.Decision in
            state.counters.packetsQueued += 1
            let isReply = packet.mark & FilterSteering.replyMark != 0
            let decision = state.tracker.classify(
                parsed, bytes: packet.bytes, isOutbound: packet.isOutbound, isReply: isReply, owner: owner, packetID: packet.id, now: now)
            switch decision {
            case .ask(let flow):
                state.counters.flowsAsked += 1
                state.held[flow.id] = [packet.id]
                state.askedAt[flow.id] = now
                if flow.url != nil, flow.direction == .outbound, parsed.transport == .tcp, parsed.payloadLength > 0 {
                    state.requests[flow.id] = parsed
                }
            case .wait(let flowID):
                if state.held[flowID, default: []].count < Self.heldPerFlowLimit {
                    state.held[flowID, default: []].append(packet.id)
                } else {
                    state.counters.malformedPackets += 1
                    return .apply(.drop)
                }
            case .pass:
                state.counters.packetsPassedWhileLearning += 1
            case .apply:
                state.counters.packetsOfDecidedFlows += 1
            case .data(_, let action, let questions):
                state.counters.packetsOfDataFlows += 1
                state.counters.dataQuestions += questions.count
                if action == .drop { state.counters.malformedPackets += 1 }
            }
            return decision
        }
        switch decision {
        case .pass: setVerdict(.accept, for: packet.id)
        case .data(let flowID, let action, let questions):
            switch action {
            case .accept: setVerdict(.accept, for: packet.id)
            case .drop: setVerdict(.drop, for: packet.id)
            case .hold: break
            }
            send(questions, of: flowID)
        case .apply(let verdict): setVerdict(.repeatWithMark(FilterSteering.mark(for: verdict)), for: packet.id)
        case .wait: break
        case .ask(var flow):
            // The program behind a TCP or UDP flow: its socket's inode (sock_diag) in /proc.
            if var application = flow.sourceApplication, parsed.transport == .tcp || parsed.transport == .udp,
               let process = owners.process(
                   isIPv6: parsed.isIPv6, isTCP: parsed.transport == .tcp,
                   local: packet.isOutbound ? parsed.source : parsed.destination, localPort: flow.localPort,
                   remote: packet.isOutbound ? parsed.destination : parsed.source, remotePort: flow.remotePort) {
                application.pid = process.pid
                application.executable = process.executable.isEmpty ? nil : process.executable
                application.cgroup = process.cgroup
                flow.sourceApplication = application
                state.withLock { $0.tracker.setSourceApplication(application, of: flow.id) }
            }
            if !ask(flow) { deliver(flowID: flow.id, verdict: failOpen ? .allow : .drop, reason: .failurePolicy) }
        }
    }

    /// Sends questions about a flow's data to the provider; if one cannot be sent the failure
    /// policy decides the flow.
    private func send(_ questions: [FlowDataFilter.Question], of flowID: UInt64) {
        for question in questions where !askData(flowID, question) {
            failByPolicy(flowID)
            return
        }
    }

    /// The data provider's verdict for a new flow: applied; for `filterData` the flow's data is
    /// read into peek windows from now on; for `needRules` the flow goes to the control provider
    /// (a second `needRules` for the same flow falls to the failure policy).
    func newFlowVerdict(flowID: UInt64, verdict: FilterNewFlowVerdict) {
        switch verdict {
        case .allow: deliver(flowID: flowID, verdict: .allow, reason: .provider)
        case .drop: deliver(flowID: flowID, verdict: .drop, reason: .provider)
        case .needRules: askForRules(flowID)
        case .filterData(nil, nil): deliver(flowID: flowID, verdict: .allow, reason: .provider)
        case .filterData(let inbound, let outbound):
            let requeue = state.withLock { state -> [UInt32]? in
                guard state.tracker.beginDataFiltering(flowID: flowID, peekOutboundBytes: outbound, peekInboundBytes: inbound, now: .now) else { return nil }
                state.counters.flowsReadingData += 1
                recordLatency(of: flowID, in: &state, now: .now)
                return state.held.removeValue(forKey: flowID) ?? []
            }
            // The packets held while the provider decided go through the queue again and are
            // read as the flow's first data.
            for id in requeue ?? [] { setVerdict(.repeatWithMark(0), for: id) }
        }
    }

    /// The data provider's verdict after seeing some of a flow's data.
    func dataVerdict(flowID: UInt64, side: FlowDataFilter.Side, verdict: FilterDataVerdict) {
        switch verdict {
        case .allow: deliver(flowID: flowID, verdict: .allow, reason: .provider)
        case .drop: deliver(flowID: flowID, verdict: .drop, reason: .provider, blockPage: false)
        case .remediate(let remediation): deliver(flowID: flowID, verdict: .drop, reason: .provider, remediation: remediation)
        case .data(let pass, let peek):
            guard let progress = state.withLock({ $0.tracker.passData(flowID: flowID, side: side, passBytes: pass, peekBytes: peek, now: .now) }) else { return }
            for id in progress.release { setVerdict(.accept, for: id) }
            if progress.passesEverything {
                deliver(flowID: flowID, verdict: .allow, reason: .provider)
            } else {
                state.withLock { $0.counters.dataQuestions += progress.questions.count }
                send(progress.questions, of: flowID)
            }
        }
    }

    private func askForRules(_ flowID: UInt64) {
        let flow = state.withLock { state -> FilterFlow? in
            guard !state.awaitingRules.contains(flowID) else { return nil }
            state.awaitingRules.insert(flowID)
            return state.tracker.reask(flowID: flowID, now: .now)
        }
        guard let flow else {
            failByPolicy(flowID)
            return
        }
        if !askControl(flow) { failByPolicy(flowID) }
    }

    /// The control provider's verdict for a flow it was asked about.
    func controlVerdict(flowID: UInt64, verdict: FilterControlVerdict) {
        switch verdict {
        case .allow: deliver(flowID: flowID, verdict: .allow, reason: .controlProvider)
        case .drop: deliver(flowID: flowID, verdict: .drop, reason: .controlProvider)
        case .updateRules:
            // The data provider hears `rulesChanged` first (see `rulesApplied`); nothing else
            // to do for this flow until then.
            break
        }
    }

    /// The data provider applied new rules: every flow waiting for rules is asked again.
    func rulesApplied() {
        let flows = state.withLock { state -> [FilterFlow] in
            state.awaitingRules.compactMap { state.tracker.reask(flowID: $0, now: .now) }
        }
        for flow in flows where !ask(flow) { failByPolicy(flow.id) }
    }

    private func failByPolicy(_ flowID: UInt64) {
        deliver(flowID: flowID, verdict: failOpen ? .allow : .drop, reason: .failurePolicy)
    }

    /// Applies a verdict to a flow: its held packets are re-injected with the verdict's mark. A
    /// blocked cleartext HTTP request is answered with the block page (and its server reset),
    /// and the flow is then dropped without a reset of its own.
    /// `blockPage`: a dropped cleartext HTTP request may get the block page (a provider's plain
    /// `drop` after reading data does not); `remediation`: the provider's link for it.
    func deliver(flowID: UInt64, verdict: FilterVerdict, reason: Reason, blockPage pageAllowed: Bool = true, remediation: FilterRemediation? = nil) {
        let now = ContinuousClock.now
        let decided = state.withLock { state -> (held: [UInt32], flow: FilterFlow, request: FlowPacket?, resetSequence: UInt32?)? in
            guard let decided = state.tracker.decide(flowID: flowID, verdict, now: now), let flow = state.tracker.flow(id: flowID) else { return nil }
            if verdict == .allow { state.counters.flowsAllowed += 1 } else { state.counters.flowsDropped += 1 }
            if reason == .failurePolicy { state.counters.decidedByFailurePolicy += 1 }
            state.awaitingRules.remove(flowID)
            recordLatency(of: flowID, in: &state, now: now)
            let request = state.requests.removeValue(forKey: flowID)
            // A page can only answer a request whose answer has not begun to reach the program.
            return ((state.held.removeValue(forKey: flowID) ?? []) + decided.held, flow, decided.inboundPassed == 0 ? request : nil, decided.inboundNextSequence)
        }
        guard let decided else { return }
        var mark = FilterSteering.mark(for: verdict)
        var servedPage = false
        if verdict == .drop, pageAllowed, let request = decided.request, let page = blockPage(decided.flow, remediation), serve(page, answering: request) {
            mark = FilterSteering.quietDropMark
            servedPage = true
        } else if verdict == .drop, let sequence = decided.resetSequence, let injector,
                  let reset = TCPSegmentBuilder.resetToProgram(of: decided.flow, sequence: sequence) {
            // The program waits for remote data netextd held: tell it the connection is over
            // (the kernel's own reset answers only the program's next segment).
            try? injector.send(reset)
        }
        state.withLock { state in
            if servedPage { state.counters.blockPagesServed += 1 }
            state.log.append(FilterLogEntry(date: Date(), flow: decided.flow, verdict: verdict, reason: reason.rawValue, servedBlockPage: servedPage))
        }
        for id in decided.held { setVerdict(.repeatWithMark(mark), for: id) }
    }

    private func recordLatency(of flowID: UInt64, in state: inout State, now: ContinuousClock.Instant) {
        guard let asked = state.askedAt.removeValue(forKey: flowID) else { return }
        let elapsed = now - asked
        let microseconds = Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000)
        if state.latencies.count < Self.latencySamples {
            state.latencies.append(microseconds)
        } else {
            state.latencies[state.latencyCursor] = microseconds
            state.latencyCursor = (state.latencyCursor + 1) % Self.latencySamples
        }
    }

    /// Sends the block page to the client and a reset to the server. False if it could not.
    private func serve(_ page: BlockPage, answering request: FlowPacket) -> Bool {
        guard let injector else { return false }
        do {
            for segment in TCPSegmentBuilder.response(to: request, payload: page.httpResponse) { try injector.send(segment) }
            try injector.send(TCPSegmentBuilder.resetToServer(for: request))
            return true
        } catch {
            logger.warning("could not send the block page", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Every flow waiting for the provider is decided by the failure policy (provider gone).
    func failWaitingFlows() {
        let waiting = state.withLock { $0.tracker.waitingFlows }
        for flow in waiting { deliver(flowID: flow.id, verdict: failOpen ? .allow : .drop, reason: .failurePolicy) }
    }

    private func expireOverdue() {
        let overdue = state.withLock { $0.tracker.expire(now: .now, deadline: deadline) }
        for flow in overdue {
            logger.warning("filter provider missed the verdict deadline", metadata: ["flow": "\(flow.id)", "policy": "\(failOpen ? "fail open" : "fail closed")"])
            deliver(flowID: flow.id, verdict: failOpen ? .allow : .drop, reason: .failurePolicy)
        }
    }

    private func setVerdict(_ verdict: NetfilterQueue.Verdict, for id: UInt32) {
        do { try queue.setVerdict(verdict, for: id) } catch {
            state.withLock { $0.counters.verdictErrors += 1 }
        }
    }
}
