import FlowInspection
import Foundation
import NetExtCore
import NetExtDaemon
import NetExtLinux
import Synchronization

/// The kernel's side of the content filter, in the test's process: give it to a
/// `FilterController` as its plumbing and send packets through it with `send(_:outbound:)`.
/// Each packet meets the steering rules netextd installed, computed by
/// `FilterSteering.outcome` (verdict marks, loopback, exempt users, the provider's
/// `FilterSettings`, empty TCP segments), with a conntrack of its own (flows keyed by
/// addresses and ports or ICMP identifier; the first packet seen sets the ORIGINAL direction).
/// What the rules queue waits for the engine's verdict; a re-injected packet (`NF_REPEAT`)
/// meets the rules again with its new mark. DNS answers arriving are copied to the log group,
/// and what netextd injects (block pages, resets) is kept in `injected`.
///
/// Not simulated: routing and sockets (the test decides what a packet is and where it goes),
/// conntrack timeouts and states (no flow is INVALID or UNTRACKED), IPv6 extension headers
/// before TCP, and the queue's length limit.
public final class SimulatedFilterKernel: FilterPlumbing {
    /// What became of a packet sent through the hook.
    public enum Fate: Sendable, Hashable {
        case passed
        case dropped
        /// A TCP packet refused with a reset.
        case reset
    }

    private struct FlowKey: Hashable {
        var transport: UInt8
        var low: [UInt8], lowPort: UInt16
        var high: [UInt8], highPort: UInt16
    }

    private struct Flow {
        var originalSource: [UInt8]
        var originalSourcePort: UInt16
        var mark: UInt32 = 0
    }

    struct Queued {
        var id: UInt32
        var bytes: [UInt8]
        var isOutbound: Bool
        var mark: UInt32
        var ownerUID: UInt32?
    }

    private struct State {
        var steering: FilterSteering?
        var installs = 0
        var flows: [FlowKey: Flow] = [:]
        var queue: SimulatedQueue?
        var dnsLog: SimulatedDNSLog?
        var injected: [[UInt8]] = []
    }

    private let state = Mutex(State())

    public init() {}

    public var needsRoot: Bool { false }

    /// The steering rules in force (nil: none installed).
    public var steering: FilterSteering? { state.withLock { $0.steering } }
    /// How many times steering was installed or changed.
    public var steeringInstalls: Int { state.withLock { $0.installs } }
    /// The packets netextd sent on its raw socket (block pages, resets), oldest first.
    public var injected: [[UInt8]] { state.withLock { $0.injected } }

    // MARK: FilterPlumbing

    public func openQueue(number: UInt16, failOpen: Bool) throws(NetExtError) -> any FilterPacketQueue {
        let queue = SimulatedQueue(number: number)
        state.withLock { $0.queue = queue }
        return queue
    }

    public func openDNSLog(group: UInt16) throws(NetExtError) -> any FilterDNSLog {
        let log = SimulatedDNSLog()
        state.withLock { $0.dnsLog = log }
        return log
    }

    public func makeInjector() throws(NetExtError) -> any FilterPacketInjector {
        SimulatedInjector { [weak self] packet in self?.state.withLock { $0.injected.append(packet) } }
    }

    public func installSteering(_ steering: FilterSteering) throws(NetExtError) {
        state.withLock { state in
            state.steering = steering
            state.installs += 1
            state.flows = [:]
        }
    }

    public func updateSteering(_ steering: FilterSteering) throws(NetExtError) {
        try state.withLock { (state) throws(NetExtError) in
            guard state.steering != nil else { throw NetExtError(.configurationInvalid, "no steering is installed to update") }
            state.steering = steering
            state.installs += 1
        }
    }

    public func removeSteering() {
        state.withLock { $0.steering = nil }
    }

    public func prepareRulesDirectory(_ directory: String, under root: String, owner: UserDatabase.User?) throws(NetExtError) {
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755]) } catch {
            throw NetExtError.readWrite("cannot prepare the filter rules directory \(directory): \(error.localizedDescription)")
        }
    }

    // MARK: Packets

    /// Sends one IP packet through the output hook (`outbound`, from a local socket of
    /// `ownerUID`) or the input hook, and returns what became of it: at once for flows the
    /// rules decide, after netextd's verdict for queued ones (at most `timeout`, then dropped,
    /// as a packet whose verdict never comes).
    public func send(_ bytes: [UInt8], outbound: Bool, ownerUID: UInt32? = nil, timeout: Duration = .seconds(30)) async -> Fate {
        guard let packet = FlowPacket(bytes) else { return .dropped }
        let key = Self.key(of: packet)
        var mark: UInt32 = 0
        // A packet is queued again at most a few times (filterData re-reads it once).
        for _ in 0..<8 {
            let step = state.withLock { state -> (outcome: FilterSteering.Outcome?, queue: SimulatedQueue?, log: SimulatedDNSLog?) in
                guard let steering = state.steering else { return (nil, nil, nil) }
                var flow = state.flows[key] ?? Flow(originalSource: packet.source, originalSourcePort: packet.sourcePort)
                let isReply = flow.originalSource != packet.source || flow.originalSourcePort != packet.sourcePort
                let steered = FilterSteering.SteeredPacket(packet: packet, isOutbound: outbound, isReply: isReply, ownerUID: ownerUID, mark: mark)
                let outcome = steering.outcome(of: steered, connectionMark: &flow.mark)
                state.flows[key] = flow
                let logsDNS = !outbound && steering.dnsLogGroup != nil && packet.transport == .udp && packet.sourcePort == 53
                return (outcome, state.queue, logsDNS ? state.dnsLog : nil)
            }
            step.log?.append(bytes)
            switch step.outcome {
            case nil, .pass?: return .passed
            case .drop?: return .dropped
            case .reset?: return .reset
            case .queue(let queuedMark)?:
                guard let queue = step.queue, !queue.isClosed else {
                    // No reader bound: --queue-bypass lets it pass when the filter fails open.
                    return state.withLock { $0.steering?.failOpen ?? true } ? .passed : .dropped
                }
                switch await queue.enqueue(bytes, isOutbound: outbound, mark: queuedMark, ownerUID: ownerUID, timeout: timeout) {
                case .accept?: return .passed
                case .drop?, nil: return .dropped
                case .repeatWithMark(let newMark)?: mark = newMark
                }
            }
        }
        return .dropped
    }

    private static func key(of packet: FlowPacket) -> FlowKey {
        let forward = (packet.source.lexicographicallyPrecedes(packet.destination))
            || (packet.source == packet.destination && packet.sourcePort <= packet.destinationPort)
        return forward
            ? FlowKey(transport: packet.protocolNumber, low: packet.source, lowPort: packet.sourcePort, high: packet.destination, highPort: packet.destinationPort)
            : FlowKey(transport: packet.protocolNumber, low: packet.destination, lowPort: packet.destinationPort, high: packet.source, highPort: packet.sourcePort)
    }
}

/// The simulated netfilter queue: packets wait here for the engine's verdict.
final class SimulatedQueue: FilterPacketQueue, @unchecked Sendable {
    let number: UInt16
    private let condition = NSCondition()
    private var pending: [SimulatedFilterKernel.Queued] = []
    private var verdicts: [UInt32: NetfilterQueue.Verdict] = [:]
    private var waiting: Set<UInt32> = []
    private var nextID: UInt32 = 1
    private var closed = false

    init(number: UInt16) { self.number = number }

    var isClosed: Bool { condition.withLock { closed } }

    /// Queues a packet and waits for its verdict (nil: none within `timeout`, or the queue closed).
    func enqueue(_ bytes: [UInt8], isOutbound: Bool, mark: UInt32, ownerUID: UInt32?, timeout: Duration) async -> NetfilterQueue.Verdict? {
        let id = condition.withLock { () -> UInt32 in
            let id = nextID
            nextID &+= 1
            pending.append(.init(id: id, bytes: bytes, isOutbound: isOutbound, mark: mark, ownerUID: ownerUID))
            waiting.insert(id)
            condition.broadcast()
            return id
        }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var looks = 0
        while true {
            let outcome = condition.withLock { () -> (verdict: NetfilterQueue.Verdict?, over: Bool) in
                if let verdict = verdicts.removeValue(forKey: id) {
                    waiting.remove(id)
                    return (verdict, true)
                }
                return (nil, closed)
            }
            if outcome.over { return outcome.verdict }
            looks += 1
            if clock.now >= deadline && looks >= 20 {
                condition.withLock { _ = waiting.remove(id) }
                return nil
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer, timeoutMilliseconds: Int32, _ handle: (NetfilterQueue.Packet) -> Void) throws(SystemError) -> Int {
        let batch = condition.withLock { () -> [SimulatedFilterKernel.Queued]? in
            let limit = Date(timeIntervalSinceNow: Double(max(timeoutMilliseconds, 1)) / 1000)
            while pending.isEmpty, !closed, condition.wait(until: limit) {}
            if closed { return nil }
            defer { pending.removeAll() }
            return pending
        }
        guard let batch else { throw SystemError("nfqueue receive", errno: EBADF, subject: "simulated queue \(number)") }
        for packet in batch {
            let count = min(packet.bytes.count, buffer.count)
            packet.bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: count) }
            handle(NetfilterQueue.Packet(
                id: packet.id, isOutbound: packet.isOutbound, mark: packet.mark, owner: packet.ownerUID.map { ($0, $0) },
                bytes: UnsafeRawBufferPointer(start: buffer.baseAddress, count: count)))
        }
        return 0
    }

    func setVerdict(_ verdict: NetfilterQueue.Verdict, for id: UInt32) throws(SystemError) {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { throw SystemError("nfqueue verdict", errno: EBADF, subject: "simulated queue \(number)") }
        guard waiting.contains(id) else { throw SystemError("nfqueue verdict", errno: ENOENT, subject: "packet \(id)") }
        verdicts[id] = verdict
    }

    func close() {
        condition.withLock {
            closed = true
            pending.removeAll()
            condition.broadcast()
        }
    }
}

/// The simulated DNS answer log.
final class SimulatedDNSLog: FilterDNSLog {
    private let packets = Mutex<[[UInt8]]>([])
    private let closed = Atomic(false)

    func append(_ packet: [UInt8]) {
        guard !closed.load(ordering: .relaxed) else { return }
        packets.withLock { $0.append(packet) }
    }

    func drain(into buffer: UnsafeMutableRawBufferPointer, _ handle: (UnsafeRawBufferPointer) -> Void) -> Int {
        let batch = packets.withLock { packets in defer { packets.removeAll() }; return packets }
        for packet in batch {
            let count = min(packet.count, buffer.count)
            packet.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: count) }
            handle(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
        }
        return 0
    }

    func close() { closed.store(true, ordering: .relaxed) }
}

/// Keeps what netextd injects.
struct SimulatedInjector: FilterPacketInjector {
    let record: @Sendable ([UInt8]) -> Void
    func send(_ packet: [UInt8]) throws(SystemError) { record(packet) }
}
