import Foundation
import Logging
import NetExtCore
import NetExtLinux
import Synchronization

/// The content filter's packet loop: reads the netfilter queue on a thread of its own, keeps the
/// flow table, holds a new flow's packets while the data provider decides, and turns verdicts
/// into conntrack marks so the rest of a decided flow never leaves the kernel.
final class FilterEngine: Sendable {
    /// Why a flow got its verdict.
    enum Reason: String, Sendable, Codable {
        case provider
        /// The provider was unavailable or missed the deadline; the failure policy decided.
        case failurePolicy = "failure-policy"
    }

    private struct State: Sendable {
        var tracker = FlowTracker()
        var held: [UInt64: [UInt32]] = [:]
        var counters = FilterCounters()
        var log = FilterLog()
        var stopped = false
    }

    private let queue: NetfilterQueue
    private let failOpen: Bool
    private let deadline: Duration
    private let logger: Logger
    /// Sends a new flow to the provider; false when no provider is there to ask.
    private let ask: @Sendable (FilterFlow) -> Bool
    private let state = Mutex(State())
    private let finished = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let threadDone = Atomic<Bool>(false)
    /// Packets of one undecided flow held at most; more are dropped (counted).
    static let heldPerFlowLimit = 512

    init(queue: NetfilterQueue, failOpen: Bool, deadline: Duration, logger: Logger, ask: @escaping @Sendable (FilterFlow) -> Bool) {
        self.queue = queue
        self.failOpen = failOpen
        self.deadline = deadline
        self.logger = logger
        self.ask = ask
    }

    var counters: FilterCounters { state.withLock { $0.counters } }
    var trackedFlows: Int { state.withLock { $0.tracker.count } }
    func logEntries(limit: Int) -> [FilterLogEntry] { state.withLock { $0.log.latest(limit) } }

    /// Starts the reading thread.
    func start() {
        let thread = Thread { [self] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
            defer { buffer.deallocate() }
            while !state.withLock({ $0.stopped }) {
                do {
                    let malformed = try queue.receive(into: buffer, timeoutMilliseconds: 200) { packet in handle(packet) }
                    if malformed > 0 { state.withLock { $0.counters.malformedPackets += malformed } }
                } catch {
                    if !state.withLock({ $0.stopped }) { logger.error("filter queue failed", metadata: ["error": "\(error)"]) }
                    break
                }
                expireOverdue()
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
    }

    private func handle(_ packet: NetfilterQueue.Packet) {
        // A re-injected packet that came back: its flow could not keep the mark. Decide this
        // packet directly instead of repeating it again.
        let returned = packet.mark & FilterSteering.verdictMask
        if returned != 0 {
            state.withLock { $0.counters.verdictErrors += 1 }
            setVerdict(returned == FilterSteering.allowMark ? .accept : .drop, for: packet.id)
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
            let decision = state.tracker.classify(parsed, bytes: packet.bytes, isOutbound: packet.isOutbound, owner: owner, now: now)
            switch decision {
            case .ask(let flow):
                state.counters.flowsAsked += 1
                state.held[flow.id] = [packet.id]
            case .wait(let flowID):
                if state.held[flowID, default: []].count < Self.heldPerFlowLimit {
                    state.held[flowID, default: []].append(packet.id)
                } else {
                    state.counters.malformedPackets += 1
                    return .apply(.drop)
                }
            default:
                break
            }
            return decision
        }
        switch decision {
        case .pass: setVerdict(.accept, for: packet.id)
        case .apply(let verdict): setVerdict(.repeatWithMark(FilterSteering.mark(for: verdict)), for: packet.id)
        case .malformed: setVerdict(failOpen ? .accept : .drop, for: packet.id)
        case .wait: break
        case .ask(let flow):
            if !ask(flow) { deliver(flowID: flow.id, verdict: failOpen ? .allow : .drop, reason: .failurePolicy) }
        }
    }

    /// Applies a verdict to a flow: its held packets are re-injected with the verdict's mark.
    func deliver(flowID: UInt64, verdict: FilterVerdict, reason: Reason) {
        let now = ContinuousClock.now
        let released = state.withLock { state -> [UInt32]? in
            guard state.tracker.decide(flowID: flowID, verdict, now: now), let flow = state.tracker.flow(id: flowID) else { return nil }
            if verdict == .allow { state.counters.flowsAllowed += 1 } else { state.counters.flowsDropped += 1 }
            if reason == .failurePolicy { state.counters.decidedByFailurePolicy += 1 }
            state.log.append(FilterLogEntry(date: Date(), flow: flow, verdict: verdict, reason: reason.rawValue))
            return state.held.removeValue(forKey: flowID) ?? []
        }
        guard let released else { return }
        let mark = FilterSteering.mark(for: verdict)
        for id in released { setVerdict(.repeatWithMark(mark), for: id) }
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
