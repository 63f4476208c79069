/// netextd's table of flows the content filter has not finished with. Fed every queued packet,
/// it says what to do with it: let it pass while the flow's destination is still being learned
/// (TCP handshake, the first bytes of a TLS ClientHello or HTTP request), hold it while the data
/// provider decides, or apply a verdict already given. Pure: no I/O, time passed in.
public struct FlowTracker: Sendable {
    /// What to do with one queued packet.
    public enum Decision: Sendable, Hashable {
        /// Let this packet through; the flow stays undecided (later packets come back).
        case pass
        /// A new flow is ready to be judged: hold the packet and ask the provider.
        case ask(FilterFlow)
        /// The provider is deciding this flow: hold the packet until it answers.
        case wait(flowID: UInt64)
        /// The flow is decided: apply this verdict (and cache it in the kernel).
        case apply(FilterVerdict)
    }

    /// A flow's identity seen from this machine: protocol and both endpoints.
    struct Key: Hashable, Sendable {
        var protocolNumber: UInt8
        var local: [UInt8]
        var localPort: UInt16
        var remote: [UInt8]
        var remotePort: UInt16
    }

    private enum Phase: Sendable {
        case inspecting
        case asked(since: ContinuousClock.Instant)
        case decided(FilterVerdict, at: ContinuousClock.Instant)
    }

    private struct Entry: Sendable {
        var flow: FilterFlow
        var phase: Phase
        /// The first bytes the opening side sent, for the TLS server name or HTTP request.
        var opening: [UInt8] = []
        var lastSeen: ContinuousClock.Instant
        /// TCP: the opener's sequence number after the bytes seen, to tell a later connection
        /// on the same addresses and ports from this one.
        var openerSequence: UInt32?
    }

    private var entries: [Key: Entry] = [:]
    private var keysByID: [UInt64: Key] = [:]
    private var nextID: UInt64 = 1
    /// How long a decided flow is remembered (packets queued before the kernel cached the
    /// verdict may still arrive, within moments).
    public var decidedMemory: Duration = .seconds(1)
    /// How long an undecided flow may sit idle before it is forgotten.
    public var idleLimit: Duration = .seconds(120)
    /// The most opening bytes read for a server name or URL.
    public static let openingLimit = TLSClientHello.limit + 5 * 4

    public init() {}

    public var count: Int { entries.count }

    /// Classifies one queued packet. `isOutbound`: it leaves this machine (output hook);
    /// `isReply`: it comes from the side that answered the connection (conntrack's reply
    /// direction), which tells who opened a flow first seen mid-way.
    public mutating func classify(
        _ packet: FlowPacket, bytes: UnsafeRawBufferPointer, isOutbound: Bool, isReply: Bool = false, owner: SourceApplication?, now: ContinuousClock.Instant
    ) -> Decision {
        let key = isOutbound
            ? Key(protocolNumber: packet.protocolNumber, local: packet.source, localPort: packet.sourcePort, remote: packet.destination, remotePort: packet.destinationPort)
            : Key(protocolNumber: packet.protocolNumber, local: packet.destination, localPort: packet.destinationPort, remote: packet.source, remotePort: packet.sourcePort)
        if let existing = entries[key], case .decided = existing.phase, Self.isLaterConnection(packet, of: existing, isOutbound: isOutbound, isReply: isReply) {
            // The same addresses and ports reused by a new TCP connection: a new flow.
            remove(key)
        }
        if var entry = entries[key] {
            entry.lastSeen = now
            if entry.flow.sourceApplication == nil, let owner { entry.flow.sourceApplication = owner }
            defer { entries[key] = entry }
            switch entry.phase {
            case .decided(let verdict, _): return .apply(verdict)
            case .asked: return .wait(flowID: entry.flow.id)
            case .inspecting:
                return inspect(&entry, packet: packet, bytes: bytes, fromOpener: !isReply && isOutbound == (entry.flow.direction == .outbound), now: now)
            }
        }
        let flow = FilterFlow(
            id: nextID, direction: isOutbound != isReply ? .outbound : .inbound, transport: packet.transport,
            localAddress: IPPrefix.format(key.local), localPort: key.localPort,
            remoteAddress: IPPrefix.format(key.remote), remotePort: key.remotePort, sourceApplication: owner)
        nextID += 1
        var entry = Entry(flow: flow, phase: .inspecting, lastSeen: now)
        keysByID[flow.id] = key
        let decision: Decision
        if packet.transport == .tcp, packet.tcpFlags & FlowPacket.syn != 0, packet.payloadLength == 0 {
            // A new connection: its destination shows in the first bytes after the handshake.
            decision = .pass
        } else {
            decision = inspect(&entry, packet: packet, bytes: bytes, fromOpener: !isReply, now: now)
        }
        entries[key] = entry
        return decision
    }

    /// Whether a TCP packet from the opener lies far (over 1 MiB) from where the decided
    /// connection's sequence numbers were: a later connection on the same ports. Packets of the
    /// decided connection still in flight lie within its window (well under 1 MiB); a new
    /// connection's initial sequence number moves on by about 16 MiB a second for the same
    /// addresses and ports (RFC 6528 §3; Linux counts in 64 ns steps), so a connection reusing
    /// the ports more than ~70 ms later is told apart.
    private static func isLaterConnection(_ packet: FlowPacket, of entry: Entry, isOutbound: Bool, isReply: Bool) -> Bool {
        guard packet.transport == .tcp, let sequence = entry.openerSequence,
              !isReply, isOutbound == (entry.flow.direction == .outbound) else { return false }
        let distance = packet.sequenceNumber &- sequence
        return distance > 1 << 20 && distance < UInt32.max - (1 << 20)
    }

    private func ask(_ entry: inout Entry, now: ContinuousClock.Instant) -> Decision {
        entry.phase = .asked(since: now)
        entry.opening = []
        return .ask(entry.flow)
    }

    private func inspect(_ entry: inout Entry, packet: FlowPacket, bytes: UnsafeRawBufferPointer, fromOpener: Bool, now: ContinuousClock.Instant) -> Decision {
        guard packet.transport == .tcp else { return ask(&entry, now: now) }
        if packet.payloadLength == 0 {
            // Handshake and bare acknowledgements pass; a closing flow is judged as it is.
            return packet.tcpFlags & (FlowPacket.fin | FlowPacket.rst) != 0 ? ask(&entry, now: now) : .pass
        }
        // The answering side speaking first (SSH, SMTP banners): judge with what is known.
        guard fromOpener else { return ask(&entry, now: now) }
        entry.openerSequence = packet.sequenceNumber &+ UInt32(packet.payloadLength)
        let end = min(packet.payloadOffset + packet.payloadLength, bytes.count)
        let room = Self.openingLimit - entry.opening.count
        entry.opening.append(contentsOf: bytes[packet.payloadOffset..<min(end, packet.payloadOffset + max(room, 0))])
        switch TLSClientHello.parse(entry.opening) {
        case .serverName(let name):
            entry.flow.remoteHostname = name
            return ask(&entry, now: now)
        case .noServerName:
            return ask(&entry, now: now)
        case .needMoreData:
            return entry.opening.count < Self.openingLimit ? .pass : ask(&entry, now: now)
        case .notTLS:
            break
        }
        switch HTTPRequestHead.parse(entry.opening) {
        case .request(let head):
            entry.flow.remoteHostname = head.host
            entry.flow.url = head.url
            return ask(&entry, now: now)
        case .needMoreData where entry.opening.count < HTTPRequestHead.limit:
            return .pass
        default:
            return ask(&entry, now: now)
        }
    }

    /// Records the verdict for a flow that was asked about. Returns false if the flow is unknown
    /// (forgotten, or never asked).
    @discardableResult
    public mutating func decide(flowID: UInt64, _ verdict: FilterVerdict, now: ContinuousClock.Instant) -> Bool {
        guard let key = keysByID[flowID], var entry = entries[key] else { return false }
        if case .decided = entry.phase { return false }
        entry.phase = .decided(verdict, at: now)
        entries[key] = entry
        return true
    }

    /// Restarts the deadline of a flow that is being asked again (after new rules). Returns
    /// the flow, or nil if it is unknown or already decided.
    public mutating func reask(flowID: UInt64, now: ContinuousClock.Instant) -> FilterFlow? {
        guard let key = keysByID[flowID], var entry = entries[key], case .asked = entry.phase else { return nil }
        entry.phase = .asked(since: now)
        entries[key] = entry
        return entry.flow
    }

    /// Adds what netextd learned of the flow's program (its pid and executable).
    public mutating func setSourceApplication(_ application: SourceApplication, of flowID: UInt64) {
        guard let key = keysByID[flowID] else { return }
        entries[key]?.flow.sourceApplication = application
    }

    /// The flow a number names, if still known.
    public func flow(id: UInt64) -> FilterFlow? {
        keysByID[id].flatMap { entries[$0]?.flow }
    }

    /// Flows asked about longer than `deadline` ago (the provider stalled), and forgets decided
    /// and idle flows past their time. The caller decides the overdue flows by its failure policy.
    public mutating func expire(now: ContinuousClock.Instant, deadline: Duration) -> [FilterFlow] {
        var overdue: [FilterFlow] = []
        for (key, entry) in entries {
            switch entry.phase {
            case .asked(let since) where now - since >= deadline:
                overdue.append(entry.flow)
            case .decided(_, let at) where now - at >= decidedMemory:
                remove(key)
            case .inspecting where now - entry.lastSeen >= idleLimit:
                remove(key)
            default:
                break
            }
        }
        return overdue.sorted { $0.id < $1.id }
    }

    /// Every flow waiting for the provider (to re-ask a restarted provider, or fail them).
    public var waitingFlows: [FilterFlow] {
        entries.values.compactMap { entry in
            if case .asked = entry.phase { return entry.flow }
            return nil
        }.sorted { $0.id < $1.id }
    }

    private mutating func remove(_ key: Key) {
        if let entry = entries.removeValue(forKey: key) { keysByID[entry.flow.id] = nil }
    }
}
