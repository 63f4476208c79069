import NetExtCore

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
        /// The provider is looking at the flow's data (`filterData`): do `action` with this
        /// packet and send the provider `questions`.
        case data(flowID: UInt64, action: FlowDataFilter.PacketAction, questions: [FlowDataFilter.Question])
    }

    /// What became of a flow that got its final verdict.
    public struct Decided: Sendable, Hashable {
        /// Packets the tracker held for it (in its data phase), to release with the verdict.
        public var held: [UInt32]
        /// Bytes of the remote side already let through to the program (a block page can
        /// only answer a request whose answer has not begun to arrive).
        public var inboundPassed: Int
        /// TCP, when the remote side's data was read: the sequence number the program expects
        /// next from it (a reset to the program must carry it).
        public var inboundNextSequence: UInt32?

        public init(held: [UInt32], inboundPassed: Int, inboundNextSequence: UInt32? = nil) {
            self.held = held
            self.inboundPassed = inboundPassed
            self.inboundNextSequence = inboundNextSequence
        }
    }

    /// What a data verdict that is not final leaves to do.
    public struct DataProgress: Sendable, Hashable {
        /// Packets whose bytes are now passed.
        public var release: [UInt32]
        /// Further questions for the provider.
        public var questions: [FlowDataFilter.Question]
        /// Every filtered direction passes everything: allow the flow outright.
        public var passesEverything: Bool

        public init(release: [UInt32], questions: [FlowDataFilter.Question], passesEverything: Bool) {
            self.release = release
            self.questions = questions
            self.passesEverything = passesEverything
        }
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
        /// The provider reads the flow's data; `since`: when the oldest open question was sent.
        case filteringData(FlowDataFilter, since: ContinuousClock.Instant?)
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
        /// TCP: the sequence number of the opener's first byte of data.
        var openingBase: UInt32?
        /// QUIC: the ClientHello's CRYPTO stream so far.
        var quic: QUICCryptoStream?
        /// In the data phase: when bytes were last shown to or answered by the provider.
        var lastProgress: ContinuousClock.Instant?
    }

    private var entries: [Key: Entry] = [:]
    /// Host names from the DNS answers seen: a new flow's remote host name until its TLS server
    /// name or HTTP Host says otherwise.
    public var dnsNames = DNSNameCache()
    /// Reads the CRYPTO frames of a QUIC client's Initial packets from a UDP datagram (nil: not
    /// one), so an outbound UDP flow to port 443 is judged by the server name of its ClientHello.
    public var quicInitialFrames: (@Sendable ([UInt8]) -> [QUICCryptoStream.Frame]?)?
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
        _ packet: FlowPacket, bytes: UnsafeRawBufferPointer, isOutbound: Bool, isReply: Bool = false, owner: SourceApplication?,
        packetID: UInt32 = 0, now: ContinuousClock.Instant
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
            case .filteringData(var filter, let since):
                let decision = Self.filterData(&filter, packet: packet, bytes: bytes, isOutbound: isOutbound, packetID: packetID, flowID: entry.flow.id)
                let asked = if case .data(_, _, let questions) = decision, !questions.isEmpty { true } else { false }
                entry.phase = .filteringData(filter, since: since ?? (asked ? now : nil))
                if asked { entry.lastProgress = now }
                return decision
            case .inspecting:
                return inspect(&entry, packet: packet, bytes: bytes, fromOpener: !isReply && isOutbound == (entry.flow.direction == .outbound), now: now)
            }
        }
        let flow = FilterFlow(
            id: nextID, direction: isOutbound != isReply ? .outbound : .inbound, transport: packet.transport,
            localAddress: IPPrefix.format(key.local), localPort: key.localPort,
            remoteAddress: IPPrefix.format(key.remote), remotePort: key.remotePort, remoteHostname: dnsNames.name(for: key.remote, now: now),
            sourceApplication: owner)
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

    private static func filterData(
        _ filter: inout FlowDataFilter, packet: FlowPacket, bytes: UnsafeRawBufferPointer, isOutbound: Bool, packetID: UInt32, flowID: UInt64
    ) -> Decision {
        let isTCP = packet.transport == .tcp
        // A reset ends the flow whatever the provider thinks; it carries no data.
        if isTCP, packet.tcpFlags & FlowPacket.rst != 0 { return .data(flowID: flowID, action: .accept, questions: []) }
        let end = min(packet.payloadOffset + packet.payloadLength, bytes.count)
        let payload = UnsafeRawBufferPointer(rebasing: bytes[min(packet.payloadOffset, end)..<end])
        let action = filter.receive(
            packetID: packetID, side: isOutbound ? .outbound : .inbound, sequence: isTCP ? packet.sequenceNumber : nil,
            payload: payload, fin: isTCP && packet.tcpFlags & FlowPacket.fin != 0)
        return .data(flowID: flowID, action: action, questions: filter.nextQuestions())
    }

    private func inspect(_ entry: inout Entry, packet: FlowPacket, bytes: UnsafeRawBufferPointer, fromOpener: Bool, now: ContinuousClock.Instant) -> Decision {
        guard packet.transport == .tcp else {
            if packet.transport == .udp, fromOpener, entry.flow.direction == .outbound, entry.flow.remotePort == 443, let reader = quicInitialFrames {
                return inspectQUIC(&entry, packet: packet, bytes: bytes, reader: reader, now: now)
            }
            return ask(&entry, now: now)
        }
        if packet.payloadLength == 0 {
            // Handshake and bare acknowledgements pass; a closing flow is judged as it is.
            return packet.tcpFlags & (FlowPacket.fin | FlowPacket.rst) != 0 ? ask(&entry, now: now) : .pass
        }
        // The answering side speaking first (SSH, SMTP banners): judge with what is known.
        guard fromOpener else { return ask(&entry, now: now) }
        if entry.openingBase == nil { entry.openingBase = packet.sequenceNumber }
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

    /// A QUIC client's first datagrams: while its ClientHello is incomplete (a large one spans
    /// several Initial packets) they pass, as a TCP ClientHello's first segments do.
    private func inspectQUIC(
        _ entry: inout Entry, packet: FlowPacket, bytes: UnsafeRawBufferPointer, reader: @Sendable ([UInt8]) -> [QUICCryptoStream.Frame]?,
        now: ContinuousClock.Instant
    ) -> Decision {
        let end = min(packet.payloadOffset + packet.payloadLength, bytes.count)
        guard let frames = reader(Array(bytes[min(packet.payloadOffset, end)..<end])) else { return ask(&entry, now: now) }
        var stream = entry.quic ?? QUICCryptoStream()
        stream.add(frames)
        switch TLSClientHello.parse(handshake: stream.prefix) {
        case .serverName(let name):
            entry.flow.remoteHostname = name
        case .needMoreData where stream.datagrams < Self.quicDatagramLimit:
            entry.quic = stream
            return .pass
        default:
            break
        }
        entry.quic = nil
        return ask(&entry, now: now)
    }

    /// QUIC Initial datagrams read for one ClientHello at most.
    static let quicDatagramLimit = 4

    /// Records the verdict for a flow that was asked about. Returns false if the flow is unknown
    /// (forgotten, or never asked).
    @discardableResult
    public mutating func decide(flowID: UInt64, _ verdict: FilterVerdict, now: ContinuousClock.Instant) -> Decided? {
        guard let key = keysByID[flowID], var entry = entries[key] else { return nil }
        var decided = Decided(held: [], inboundPassed: 0)
        switch entry.phase {
        case .decided: return nil
        case .filteringData(let filter, _):
            decided = Decided(
                held: filter.heldPackets, inboundPassed: filter.passedBytes(.inbound),
                inboundNextSequence: entry.flow.transport == .tcp ? filter.nextSequence(.inbound) : nil)
        default: break
        }
        entry.phase = .decided(verdict, at: now)
        entries[key] = entry
        return decided
    }

    /// The provider asked to see the flow's data (`filterData`): from now on its packets are
    /// read into peek windows. nil leaves a direction unfiltered. Returns false if the flow is
    /// unknown or not waiting for its first verdict. The packets held while it was asked should
    /// be queued again (they are then read as data).
    public mutating func beginDataFiltering(flowID: UInt64, peekOutboundBytes: Int?, peekInboundBytes: Int?, now: ContinuousClock.Instant) -> Bool {
        guard let key = keysByID[flowID], var entry = entries[key], case .asked = entry.phase else { return false }
        // The opener's data counts from its first byte seen; the other side's from its first.
        let openerIsLocal = entry.flow.direction == .outbound
        let filter = FlowDataFilter(
            peekOutboundBytes: peekOutboundBytes, peekInboundBytes: peekInboundBytes,
            outboundBase: openerIsLocal ? entry.openingBase : nil, inboundBase: openerIsLocal ? nil : entry.openingBase)
        entry.phase = .filteringData(filter, since: nil)
        entry.lastProgress = now
        entries[key] = entry
        return true
    }

    /// The provider's `dataVerdict(passBytes:peekBytes:)` for one direction of a flow in its data
    /// phase; nil if the flow is unknown or not in it.
    public mutating func passData(flowID: UInt64, side: FlowDataFilter.Side, passBytes: Int, peekBytes: Int, now: ContinuousClock.Instant) -> DataProgress? {
        guard let key = keysByID[flowID], var entry = entries[key], case .filteringData(var filter, _) = entry.phase else { return nil }
        let release = filter.pass(side, bytes: passBytes, peek: peekBytes)
        let questions = filter.nextQuestions()
        entry.phase = .filteringData(filter, since: filter.isAsking ? now : nil)
        entry.lastProgress = now
        entries[key] = entry
        return DataProgress(release: release, questions: questions, passesEverything: filter.passesEverything)
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
            case .filteringData(_, let since?) where now - since >= deadline:
                overdue.append(entry.flow)
            case .filteringData(let filter, nil) where !filter.heldPackets.isEmpty && now - (entry.lastProgress ?? entry.lastSeen) >= deadline:
                // Bytes held, nothing new to show, no question out: the sender waits for
                // acknowledgements of what is held, the provider for more data. Stalled.
                overdue.append(entry.flow)
            case .filteringData(let filter, _) where now - entry.lastSeen >= idleLimit:
                // Idle while reading data: packets still held follow the failure policy.
                if filter.heldPackets.isEmpty { remove(key) } else { overdue.append(entry.flow) }
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
            switch entry.phase {
            case .asked, .filteringData: return entry.flow
            default: return nil
            }
        }.sorted { $0.id < $1.id }
    }

    private mutating func remove(_ key: Key) {
        if let entry = entries.removeValue(forKey: key) { keysByID[entry.flow.id] = nil }
    }
}
